// OpenTelemetry traces of the gateway: one TracerProvider per gateway (never registered
// globally, so gateways in one process never share spans), exported over OTLP/HTTP. Contexts
// are passed explicitly (no context manager): a request's SERVER span is the parent of its
// upstream CLIENT spans, and a CLIENT span's context reaches the upstream in `_meta`. What a
// client names reaches a span redacted like a log line and cut (limits.ts), and what is sampled
// is the gateway's decision (sampler.ts).
import { ROOT_CONTEXT, SpanKind, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter, type SpanLimits } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { redactCut } from '../util/redact.js';
import { parseTraceparent, parseTracestate } from '../util/trace.js';
import { cut } from '../util/cut.js';
import { CLOSE_TIMEOUT_MS, PAYLOAD_LIMIT, TEXT_LIMIT } from './limits.js';
import { RequestTrace, type TraceHost, type UpstreamAddress } from './request-trace.js';
import { GatewaySampler, trustingCaller } from './sampler.js';

export { errorKindOf, requestAttributes, RequestTrace, UpstreamTrace, type RequestFacts, type UpstreamAddress } from './request-trace.js';
export { PAYLOAD_LIMIT, TEXT_LIMIT } from './limits.js';

/** What `tracing` in the config says (config/telemetry-schema.ts), and what the environment adds. */
export interface TracingSettings {
  otlp: { endpoint?: string | undefined };
  sampleRatio: number;
  payloads: boolean;
  /** A request whose caller sampled its trace is always sampled (tracing.trustCallerSampling; default off). */
  trustCallerSampling?: boolean;
}

export interface TracingOptions {
  /** The standard OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_SDK_DISABLED …). */
  env: Readonly<Record<string, string | undefined>>;
  serviceVersion: string;
  /** Where an upstream is, for `server.address` and `network.transport` of its CLIENT spans. */
  addressOf: (upstream: string) => UpstreamAddress | undefined;
  /** Keeps secrets out of span names, string attributes, status messages and payloads (the log redactor). */
  redact?: (text: string) => string;
  /** Replaces the OTLP exporter (embedding; never set by the gateway itself). */
  exporter?: SpanExporter;
  /** A secret every replica holds (from sessions.keys): they then sample the same traces. */
  samplingSecret?: string;
}

/** OTLP/HTTP paths under a collector's base URL (OTLP specification, "OTLP/HTTP Request"). */
export function signalUrl(base: string, signal: 'traces' | 'logs'): string {
  return `${base.replace(/\/+$/, '')}/v1/${signal}`;
}

/**
 * The traces endpoint: the config's, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is),
 * else OTEL_EXPORTER_OTLP_ENDPOINT (a base URL); undefined when none is set.
 */
export function tracesEndpoint(settings: TracingSettings, env: TracingOptions['env']): string | undefined {
  if (settings.otlp.endpoint !== undefined) return signalUrl(settings.otlp.endpoint, 'traces');
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (own) return own;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? signalUrl(base, 'traces') : undefined;
}

/**
 * What one span holds at most (the SDK's own defaults are unbounded values and 128 of each):
 * no attribute value longer than a payload's, and room for the few attributes and events the
 * gateway sets. The SDK cuts by slicing, which keeps the original alive, so client-chosen strings
 * are cut (copied) before they reach a span; these limits are the backstop.
 */
const SPAN_LIMITS: SpanLimits = { attributeValueLengthLimit: PAYLOAD_LIMIT, attributeCountLimit: 64, eventCountLimit: 32, attributePerEventCountLimit: 16 };

/** The carrier of a W3C trace context: only valid values, or nothing. */
function carrierOf(traceparent: unknown, tracestate: unknown): Record<string, string> | undefined {
  const parent = parseTraceparent(traceparent);
  if (parent === undefined) return undefined;
  const state = parseTracestate(tracestate);
  return state === undefined ? { traceparent: parent } : { traceparent: parent, tracestate: state };
}

export class Tracing implements TraceHost {
  readonly payloads: boolean;
  readonly #provider: BasicTracerProvider;
  readonly #tracer: Tracer;
  readonly #propagator = new W3CTraceContextPropagator();
  readonly #addressOf: TracingOptions['addressOf'];
  readonly #redact: (text: string) => string;
  readonly #sampleRatio: number;
  readonly #sampler: GatewaySampler;
  readonly #trustCallers: boolean;

  /** Tracing as configured, or undefined when no endpoint is known (then nothing is traced at all). */
  static create(settings: TracingSettings, options: TracingOptions): Tracing | undefined {
    if (options.env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
    const url = tracesEndpoint(settings, options.env);
    if (url === undefined && options.exporter === undefined) return undefined;
    return new Tracing(settings, options, options.exporter ?? new OTLPTraceExporter({ url }));
  }

  private constructor(settings: TracingSettings, options: TracingOptions, exporter: SpanExporter) {
    this.payloads = settings.payloads;
    this.#sampleRatio = settings.sampleRatio;
    this.#sampler = new GatewaySampler(settings.sampleRatio, options.samplingSecret);
    this.#trustCallers = settings.trustCallerSampling === true;
    this.#addressOf = options.addressOf;
    this.#redact = options.redact ?? ((text) => text);
    this.#provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.env.OTEL_SERVICE_NAME?.trim() || 'switchyard', [ATTR_SERVICE_VERSION]: options.serviceVersion }),
      sampler: this.#sampler,
      spanLimits: SPAN_LIMITS,
      spanProcessors: [new BatchSpanProcessor(exporter)],
    });
    this.#tracer = this.#provider.getTracer('switchyard', options.serviceVersion);
  }

  /**
   * The remote parent an authenticated request names: its `_meta` trace context first, else the
   * HTTP headers'. Its sampled flag decides only with tracing.trustCallerSampling.
   */
  parentOf(meta: { traceparent?: unknown; tracestate?: unknown } | undefined, header: { traceparent?: string | undefined; tracestate?: string | undefined }): Context {
    const parent = this.#remoteParent(carrierOf(meta?.traceparent, meta?.tracestate) ?? carrierOf(header.traceparent, header.tracestate));
    return this.#trustCallers && parent !== ROOT_CONTEXT ? trustingCaller(parent) : parent;
  }

  #remoteParent(carrier: Record<string, string> | undefined): Context {
    return carrier === undefined ? ROOT_CONTEXT : this.#propagator.extract(ROOT_CONTEXT, carrier, { get: (c, key) => c[key], keys: (c) => Object.keys(c) });
  }

  /**
   * Whether a request under `parent` can be recorded at all: one continuing a caller's trace as
   * the sampler decides it (never when the caller did not sample), a new trace when sampleRatio
   * is above 0. When not, the caller takes the untraced path, which continues the caller's
   * context upstream just the same.
   */
  mayRecord(parent: Context): boolean {
    const context = trace.getSpanContext(parent);
    return context === undefined ? this.#sampleRatio > 0 : this.#sampler.sampled(parent, context.traceId);
  }

  /** The SERVER span of one client request, under `parent`. */
  request(name: string, attributes: Attributes, parent: Context): RequestTrace {
    const span = this.#tracer.startSpan(this.text(name), { kind: SpanKind.SERVER, attributes: this.#bounded(attributes) }, parent);
    return new RequestTrace(this, span);
  }

  /**
   * A span of its own (a sign-in, a token issued, a request refused), in the trace context given
   * if any. Sampled by sampleRatio only, never by the caller's flag: many of these callers are
   * not authenticated (a token request, a refused credential).
   */
  standalone(name: string, attributes: Attributes, traceparent?: string, tracestate?: string): Span {
    return this.#tracer.startSpan(this.text(name), { kind: SpanKind.INTERNAL, attributes: this.#bounded(attributes) }, this.#remoteParent(carrierOf(traceparent, tracestate)));
  }

  /** RequestTrace's CLIENT spans. */
  startClient(name: string, attributes: Attributes, parent: Span): Span {
    return this.#tracer.startSpan(this.text(name), { kind: SpanKind.CLIENT, attributes: this.#bounded(attributes) }, trace.setSpan(ROOT_CONTEXT, parent));
  }

  /** The W3C fields of a span's context, for an upstream request's `_meta`. */
  contextFields(span: Span): { traceparent?: string; tracestate?: string } {
    const fields: { traceparent?: string; tracestate?: string } = {};
    this.#propagator.inject(trace.setSpan(ROOT_CONTEXT, span), fields, {
      set: (carrier, key, value) => {
        if (key === 'traceparent' || key === 'tracestate') carrier[key] = value;
      },
    });
    return fields;
  }

  addressOf(upstream: string): UpstreamAddress | undefined {
    return this.#addressOf(upstream);
  }

  /**
   * A client's string as a span keeps it (a name, a URI, an error message quoting them): redacted
   * like a log line, at most TEXT_LIMIT characters (a copy), reading a bounded prefix of it.
   */
  text(value: string): string {
    return redactCut(value, TEXT_LIMIT, this.#redact).text;
  }

  /** String values redacted and cut to TEXT_LIMIT (text()), in place. */
  #bounded(attributes: Attributes): Attributes {
    for (const key in attributes) {
      const value = attributes[key];
      if (typeof value === 'string') attributes[key] = this.text(value);
    }
    return attributes;
  }

  /** A payload as a span attribute: JSON, redacted, at most PAYLOAD_LIMIT characters. */
  payload(value: unknown): string {
    return cut(this.#redact(JSON.stringify(value) ?? 'null'), PAYLOAD_LIMIT);
  }

  /** Exports what is still buffered. */
  flush(): Promise<void> {
    return this.#provider.forceFlush();
  }

  /**
   * Exports what is buffered and stops; spans ended later are dropped. Waits `timeoutMs` at most
   * (a collector that never answers): then it rejects, and what was not exported is lost.
   */
  async shutdown(timeoutMs = CLOSE_TIMEOUT_MS): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`spans not exported within ${timeoutMs} ms of shutdown were dropped`)), timeoutMs);
    });
    try {
      await Promise.race([this.#provider.shutdown(), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
