// The audit log: takes entries from anywhere in the gateway (the router's calls, the edge's
// refusals, sign-ins, the front door, pinning, reloads), makes each a `switchyard.audit/1`
// record, and hands it to the configured sink without ever waiting for it.
import type { AuditConfig } from '../config/telemetry-schema.js';
import type { Metrics } from '../metrics/metrics.js';
import { signalUrl } from '../telemetry/tracing.js';
import { RotatingFile, StreamWriter, type WritableLike } from './file-writer.js';
import { OtlpSink } from './otlp-sink.js';
import { BoundedQueue } from './queue.js';
import { auditLine, auditRecord, type AuditEntry, type RecordOptions } from './record.js';

export { AUDIT_SCHEMA, type AuditEntry, type AuditEvent } from './record.js';
export type { WritableLike } from './file-writer.js';

/** Records held at most while a sink is busy; past it they are dropped and counted. */
export const AUDIT_QUEUE_LIMIT = 10_000;

export interface AuditDeps {
  metrics: Metrics;
  /** Where the stdout sink writes (main.ts passes process.stdout); without it those records go nowhere. */
  stdout?: WritableLike;
  /** A config-relative path made absolute (the file sink's). */
  resolvePath: (path: string) => string;
  /** The log redactor: keeps secrets out of every string field of a record, and its arguments. */
  redact?: (text: string) => string;
  /** tracing.otlp.endpoint, whose /v1/logs the OTLP sink uses. */
  otlpEndpoint?: string | undefined;
  /** The standard OTEL_* variables. */
  env: Readonly<Record<string, string | undefined>>;
  serviceVersion: string;
  limit?: number;
  /** How long close() waits for a stalled sink (default 5 s); what it never took is counted as dropped. */
  closeTimeoutMs?: number;
  now?: () => Date;
  onerror?: (err: unknown) => void;
}

/** The logs endpoint of the OTLP sink: the config's collector, else the standard variables (else the exporter's default). */
function logsEndpoint(deps: AuditDeps): string | undefined {
  if (deps.otlpEndpoint !== undefined) return signalUrl(deps.otlpEndpoint, 'logs');
  const own = deps.env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT?.trim();
  if (own) return own;
  const base = deps.env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? signalUrl(base, 'logs') : undefined;
}

export class AuditLog {
  readonly #config: AuditConfig;
  readonly #metrics: Metrics;
  readonly #recorded = new Map<string, { inc(): void }>();
  readonly #now: () => Date;
  readonly #options: Omit<RecordOptions, 'time'>;
  readonly #queue: BoundedQueue | undefined;
  readonly #otlp: OtlpSink | undefined;
  /** The sink's label in switchyard_audit_dropped_total. */
  readonly sink: 'stdout' | 'file' | 'otlp';

  constructor(config: AuditConfig, deps: AuditDeps) {
    this.#config = config;
    this.#metrics = deps.metrics;
    this.#now = deps.now ?? (() => new Date());
    this.#options = { arguments: config.arguments, redact: deps.redact ?? ((text) => text) };
    const limit = deps.limit ?? AUDIT_QUEUE_LIMIT;
    const { sink } = config;
    this.sink = sink === 'stdout' ? 'stdout' : 'file' in sink ? 'file' : 'otlp';
    // Counter children made once: a flood into a full sink costs one increment per record.
    const dropped = this.#metrics.auditDropped.labels({ sink: this.sink });
    const ondrop = (count: number): void => {
      if (count > 0) dropped.inc(count);
    };
    if (sink !== 'stdout' && 'otlp' in sink) {
      const serviceName = deps.env.OTEL_SERVICE_NAME?.trim() || 'switchyard';
      this.#otlp = new OtlpSink({ url: logsEndpoint(deps), limit, ondrop, onerror: deps.onerror, closeTimeoutMs: deps.closeTimeoutMs, serviceName, serviceVersion: deps.serviceVersion });
      return;
    }
    const writer = sink === 'stdout' ? new StreamWriter(deps.stdout ?? { write: (_chunk, done) => (done(), true) }) : new RotatingFile({ ...sink.file, path: deps.resolvePath(sink.file.path) });
    this.#queue = new BoundedQueue(writer, { limit, ondrop, ...(deps.onerror ? { onerror: deps.onerror } : {}), ...(deps.closeTimeoutMs !== undefined ? { closeTimeoutMs: deps.closeTimeoutMs } : {}) });
  }

  /** Whether tool arguments go into records (so callers can skip gathering them). */
  get recordsArguments(): boolean {
    return this.#config.arguments;
  }

  /** Records one event; never waits, never throws for a full sink (the record is dropped and counted). */
  write(entry: AuditEntry): void {
    // A full queue drops the record before any work is spent on it.
    if (this.#queue && !this.#queue.accepting) return void this.#queue.offer('');
    const time = this.#now();
    const options = { ...this.#options, time };
    const taken = this.#otlp ? this.#otlp.offer(auditRecord(entry, options), time) : this.#queue!.offer(auditLine(entry, options));
    if (!taken) return;
    let counter = this.#recorded.get(entry.event);
    if (!counter) this.#recorded.set(entry.event, (counter = this.#metrics.auditRecords.labels({ event: entry.event })));
    counter.inc();
  }

  /** Lines waiting for a queued sink (stdout, file). */
  get queued(): number {
    return this.#queue?.size ?? 0;
  }

  /** Writes what is held (bounded in time) and closes the sink. */
  async close(): Promise<void> {
    await this.#queue?.close();
    await this.#otlp?.close();
  }
}
