// The audit OTLP sink: each record an OTLP log record (its fields the body, the event its
// name), batched and exported over OTLP/HTTP by the OpenTelemetry logs SDK. Records held but
// not yet exported are bounded here, so what the batch processor would drop silently is
// refused first and counted.
import { SeverityNumber, type AnyValueMap, type Logger } from '@opentelemetry/api-logs';
import type { ExportResult } from '@opentelemetry/core';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';

export interface OtlpSinkOptions {
  /** The logs endpoint (…/v1/logs); undefined: the exporter's own (OTEL_EXPORTER_OTLP_* or localhost). */
  url: string | undefined;
  limit: number;
  ondrop: (count: number) => void;
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
  /** Records emitted and not yet through an export (successful or not). */
  #held = 0;

  constructor(options: OtlpSinkOptions) {
    this.#limit = options.limit;
    this.#ondrop = options.ondrop;
    const inner = options.exporter ?? new OTLPLogExporter(options.url === undefined ? {} : { url: options.url });
    const counting: LogRecordExporter = {
      export: (records: ReadableLogRecord[], done: (result: ExportResult) => void) => {
        inner.export(records, (result) => {
          this.#held -= records.length;
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

  /** Emits one record; false when it was dropped (too many held). */
  offer(record: Record<string, unknown>, time: Date): boolean {
    if (this.#held >= this.#limit) {
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

  flush(): Promise<void> {
    return this.#provider.forceFlush();
  }

  close(): Promise<void> {
    return this.#provider.shutdown();
  }
}
