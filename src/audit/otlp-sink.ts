// The audit OTLP sink: each record an OTLP log record (its fields the body, the event its
// name), batched and exported over OTLP/HTTP by the OpenTelemetry logs SDK. Records held but
// not yet exported are bounded here, so what the batch processor would drop silently is
// refused first and counted; so is every record of an export that failed, and whatever is still
// held when close() gives up on the collector.
import { SeverityNumber, type AnyValueMap, type Logger } from '@opentelemetry/api-logs';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { CLOSE_TIMEOUT_MS } from '../telemetry/limits.js';

export interface OtlpSinkOptions {
  /** The logs endpoint (…/v1/logs); undefined: the exporter's own (OTEL_EXPORTER_OTLP_* or localhost). */
  url: string | undefined;
  limit: number;
  /** Hears every record lost: refused (too many held), in a failed export, or held at close. */
  ondrop: (count: number) => void;
  /** Hears why the sink could not shut down cleanly. */
  onerror?: ((err: unknown) => void) | undefined;
  /** How long close() waits for the collector (default CLOSE_TIMEOUT_MS). */
  closeTimeoutMs?: number | undefined;
  serviceName: string;
  serviceVersion: string;
  /** Replaces the OTLP exporter (embedding; never set by the gateway itself). */
  exporter?: LogRecordExporter;
}

export class OtlpSink {
  readonly #provider: LoggerProvider;
  readonly #logger: Logger;
  readonly #limit: number;
  readonly #ondrop: (count: number) => void;
  readonly #onerror: (err: unknown) => void;
  readonly #closeTimeoutMs: number;
  /** Records emitted and not yet through an export (successful or not). */
  #held = 0;
  #closing = false;
  /** close() gave up waiting: what was held is counted, and exports settling later count nothing. */
  #abandoned = false;

  constructor(options: OtlpSinkOptions) {
    this.#limit = options.limit;
    this.#ondrop = options.ondrop;
    this.#onerror = options.onerror ?? (() => {});
    this.#closeTimeoutMs = options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS;
    const inner = options.exporter ?? new OTLPLogExporter(options.url === undefined ? {} : { url: options.url });
    const counting: LogRecordExporter = {
      export: (records: ReadableLogRecord[], done: (result: ExportResult) => void) => {
        inner.export(records, (result) => {
          this.#settled(records.length, result.code === ExportResultCode.SUCCESS);
          done(result);
        });
      },
      shutdown: () => inner.shutdown(),
    };
    this.#provider = new LoggerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName, [ATTR_SERVICE_VERSION]: options.serviceVersion }),
      // The processor's own queue is as large as ours, so it never drops before we count.
      processors: [new BatchLogRecordProcessor(counting, { maxQueueSize: options.limit, maxExportBatchSize: Math.min(512, options.limit) })],
    });
    this.#logger = this.#provider.getLogger('switchyard.audit');
  }

  /** Emits one record; false when it was dropped (too many held, or closing). */
  offer(record: Record<string, unknown>, time: Date): boolean {
    if (this.#closing || this.#held >= this.#limit) {
      this.#ondrop(1);
      return false;
    }
    this.#held++;
    this.#logger.emit({
      eventName: `switchyard.audit.${String(record.event)}`,
      timestamp: time,
      severityNumber: SeverityNumber.INFO,
      severityText: 'INFO',
      body: record as AnyValueMap,
    });
    return true;
  }

  /** An export settled: its records are no longer held, and lost unless it succeeded. */
  #settled(count: number, exported: boolean): void {
    if (this.#abandoned) return;
    this.#held -= count;
    if (!exported) this.#ondrop(count);
  }

  flush(): Promise<void> {
    return this.#provider.forceFlush();
  }

  /**
   * Exports what is held and stops, waiting closeTimeoutMs at most (a collector that never
   * answers): then what is still held is counted as dropped. Never rejects.
   */
  async close(): Promise<void> {
    this.#closing = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.#closeTimeoutMs)));
    try {
      const finished = await Promise.race([
        this.#provider.shutdown().then(
          () => true,
          (err: unknown) => {
            this.#onerror(err);
            return true;
          },
        ),
        deadline,
      ]);
      // Held after the shutdown finished (it failed) or gave up: never exported.
      if (!finished || this.#held > 0) {
        this.#abandoned = true;
        this.#ondrop(this.#held);
        this.#held = 0;
      }
    } finally {
      clearTimeout(timer);
    }
  }
}
