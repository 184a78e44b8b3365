// OpenTelemetry traces of the gateway: one TracerProvider per gateway (never registered
// globally, so gateways in one process never share spans), exported over OTLP/HTTP. Contexts
// are passed explicitly (no context manager): a request's SERVER span is the parent of its
// upstream CLIENT spans, and a CLIENT span's context reaches the upstream in `_meta`.
import { ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { parseTraceparent, parseTracestate } from '../util/trace.js';
import { RequestTrace, type TraceHost, type UpstreamAddress } from './request-trace.js';

export { errorKindOf, requestAttributes, RequestTrace, UpstreamTrace, type RequestFacts, type UpstreamAddress } from './request-trace.js';

/** What `tracing` in the config says (config/telemetry-schema.ts), and what the environment adds. */
export interface TracingSettings {
  otlp: { endpoint?: string | undefined };
  sampleRatio: number;
  payloads: boolean;
}

export interface TracingOptions {
  /** The standard OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_SDK_DISABLED …). */
  env: Readonly<Record<string, string | undefined>>;
  serviceVersion: string;
  /** Where an upstream is, for `server.address` and `network.transport` of its CLIENT spans. */
  addressOf: (upstream: string) => UpstreamAddress | undefined;
  /** Keeps secrets out of payload attributes (the log redactor). */
  redact?: (text: string) => string;
  /** Replaces the OTLP exporter (embedding; never set by the gateway itself). */
  exporter?: SpanExporter;
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
    this.#addressOf = options.addressOf;
    this.#redact = options.redact ?? ((text) => text);
    this.#provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.env.OTEL_SERVICE_NAME?.trim() || 'switchyard', [ATTR_SERVICE_VERSION]: options.serviceVersion }),
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
      spanProcessors: [new BatchSpanProcessor(exporter)],
    });
    this.#tracer = this.#provider.getTracer('switchyard', options.serviceVersion);
  }

  /** The remote parent a request names: its `_meta` trace context first, else the HTTP headers'. */
  parentOf(meta: { traceparent?: unknown; tracestate?: unknown } | undefined, header: { traceparent?: string | undefined; tracestate?: string | undefined }): Context {
    const carrier = carrierOf(meta?.traceparent, meta?.tracestate) ?? carrierOf(header.traceparent, header.tracestate);
    return carrier === undefined ? ROOT_CONTEXT : this.#propagator.extract(ROOT_CONTEXT, carrier, { get: (c, key) => c[key], keys: (c) => Object.keys(c) });
  }

  /**
   * Whether a request under `parent` can be recorded at all (parent-based sampling): a parent
   * not sampled never is, a new trace only when sampleRatio is above 0. When not, the caller
   * takes the untraced path, which continues the caller's context upstream just the same.
   */
  mayRecord(parent: Context): boolean {
    const context = trace.getSpanContext(parent);
    return context === undefined ? this.#sampleRatio > 0 : (context.traceFlags & TraceFlags.SAMPLED) !== 0;
  }

  /** The SERVER span of one client request, under `parent`. */
  request(name: string, attributes: Attributes, parent: Context): RequestTrace {
    const span = this.#tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
    return new RequestTrace(this, span);
  }

  /** A span of its own (a sign-in, a token issued), under the trace context given if any. */
  standalone(name: string, attributes: Attributes, traceparent?: string, tracestate?: string): Span {
    return this.#tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, this.parentOf(undefined, { traceparent, tracestate }));
  }

  /** RequestTrace's CLIENT spans. */
  startClient(name: string, attributes: Attributes, parent: Span): Span {
    return this.#tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, trace.setSpan(ROOT_CONTEXT, parent));
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

  /** A payload as a span attribute: JSON, redacted, at most PAYLOAD_LIMIT characters. */
  payload(value: unknown): string {
    const text = this.#redact(JSON.stringify(value) ?? 'null');
    return text.length > PAYLOAD_LIMIT ? text.slice(0, PAYLOAD_LIMIT) : text;
  }

  /** Exports what is still buffered. */
  flush(): Promise<void> {
    return this.#provider.forceFlush();
  }

  /** Exports what is buffered and stops; spans ended later are dropped. */
  shutdown(): Promise<void> {
    return this.#provider.shutdown();
  }
}

/** Payload attributes are cut to 4 KiB (tracing.payloads). */
export const PAYLOAD_LIMIT = 4096;
