// Which traces the gateway records. The share is the gateway's to decide (tracing.sampleRatio),
// for new traces and those a caller continues alike: a caller's sampled flag alone would let any
// client make every request exported. Only a caller the config trusts decides for itself.
import { createHmac, randomBytes } from 'node:crypto';
import { createContextKey, isSpanContextValid, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { SamplingDecision, type Sampler, type SamplingResult } from '@opentelemetry/sdk-trace-base';

/** On a caller's context whose sampled flag is followed (tracing.trustCallerSampling, an authenticated request). */
const TRUSTED = createContextKey('switchyard.trusted-caller-sampling');

/** The caller's context, marked so that its sampled flag decides. */
export function trustingCaller(context: Context): Context {
  return context.setValue(TRUSTED, true);
}

export class GatewaySampler implements Sampler {
  readonly #ratio: number;
  /** ratio × 2³², compared with the first 32 bits of the keyed hash. */
  readonly #bound: number;
  /**
   * Secret, so a caller cannot learn which trace ids fall in the share and pick those: derived
   * from `secret` when the replicas share one (each then samples the same traces: a trace that
   * crosses replicas is whole or absent), else drawn for this process.
   */
  readonly #key: Buffer;

  constructor(ratio: number, secret?: string) {
    this.#ratio = ratio;
    this.#bound = Math.floor(ratio * 2 ** 32);
    this.#key = secret === undefined ? randomBytes(32) : createHmac('sha256', secret).update('switchyard trace sampling').digest();
  }

  /**
   * Whether `traceId` is in the sampled share: a keyed hash of it, so every span of one trace gets
   * the same answer here. (The SDK's TraceIdRatioBasedSampler reads the id's bits as they are: a
   * caller sending an id of zeros and a one would be sampled under any ratio above 0.)
   */
  inShare(traceId: string): boolean {
    if (this.#ratio >= 1) return true;
    if (this.#ratio <= 0) return false;
    return createHmac('sha256', this.#key).update(traceId).digest().readUInt32BE(0) < this.#bound;
  }

  /** Whether a span under `parent` in trace `traceId` is recorded. */
  sampled(parent: Context, traceId: string): boolean {
    const context = trace.getSpanContext(parent);
    if (context === undefined || !isSpanContextValid(context)) return this.inShare(traceId);
    const flagged = (context.traceFlags & TraceFlags.SAMPLED) !== 0;
    // A CLIENT span under the gateway's own SERVER span: decided with that span.
    if (!context.isRemote) return flagged;
    // A trace the caller did not sample is never recorded here; one it did, by the gateway's share.
    if (!flagged) return false;
    return parent.getValue(TRUSTED) === true || this.inShare(traceId);
  }

  shouldSample(parent: Context, traceId: string): SamplingResult {
    return { decision: this.sampled(parent, traceId) ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD };
  }

  toString(): string {
    return `GatewaySampler{ratio=${this.#ratio}}`;
  }
}
