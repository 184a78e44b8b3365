// Config of traces and audit records: `tracing` (OpenTelemetry spans over OTLP/HTTP) and `audit`
// (one versioned JSON record per security-relevant event). Keys are a public contract.
import { z } from 'zod';

export const tracing = z.strictObject({
  otlp: z
    .strictObject({
      endpoint: z
        .url({ protocol: /^https?$/ })
        .optional()
        .describe('The OTLP/HTTP collector, as its base URL (`http://otel-collector:4318`): spans go to `/v1/traces` under it. Omitted: the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`, and without either no span is made at all.'),
    })
    .prefault({})
    .describe('Where spans are exported (OTLP over HTTP; `OTEL_EXPORTER_OTLP_HEADERS` and the other standard variables apply).'),
  sampleRatio: z
    .number()
    .min(0)
    .max(1)
    .default(1)
    .describe('The share of traces sampled here, decided by the gateway (a keyed hash of the trace id): new traces and those a caller continues alike. A request continuing a caller\'s trace keeps its trace id; one whose caller did not sample it is never sampled.'),
  trustCallerSampling: z
    .boolean()
    .default(false)
    .describe('`true`: an authenticated request whose caller sampled its trace (the `sampled` flag of `_meta.traceparent`, else the `traceparent` header) is always sampled, whatever `sampleRatio` says. Only for callers trusted with the export volume: any of them can set the flag on every request. Refusals before authentication and security events never follow it.'),
  payloads: z
    .boolean()
    .default(false)
    .describe('Tool arguments and results as span attributes (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), redacted and truncated to 4 KiB. Off: no payload reaches a span.'),
});

const fileSink = z.strictObject({
  path: z.string().min(1).describe("The file records are appended to, relative to the config file's directory."),
  maxBytes: z.number().int().min(1024).default(100 * 1024 * 1024).describe('A file reaching this size is renamed `<path>.1` (older ones shift to `.2` …) and a new one started.'),
  keep: z.number().int().min(0).max(100).default(5).describe('Rotated files kept besides the current one; older ones are deleted.'),
});

export const audit = z.strictObject({
  sink: z
    .union([
      z.literal('stdout'),
      z.strictObject({ file: fileSink.describe('Records appended to a file rotated by size.') }),
      z.strictObject({ otlp: z.literal(true).describe('Records as OTLP log records, to `tracing.otlp.endpoint` (`/v1/logs`) or the standard `OTEL_EXPORTER_OTLP_*` variables.') }),
    ])
    .default('stdout')
    .describe('Where records go: `stdout` (one JSON line each), `{ file: { path, maxBytes, keep } }`, or `{ otlp: true }` (OTLP logs). Every sink has a bounded queue and never holds up a call: what does not fit is dropped and counted (`switchyard_audit_dropped_total`).'),
  arguments: z
    .boolean()
    .default(false)
    .describe('Tool arguments in tool.call records, redacted like log lines and cut to 4 KiB of JSON. Off: no argument value is recorded.'),
});

export type TracingConfig = z.output<typeof tracing>;
export type AuditConfig = z.output<typeof audit>;
