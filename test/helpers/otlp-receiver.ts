// An OTLP/HTTP receiver for tests: node:http on a free port taking /v1/traces and /v1/logs as
// protobuf (decoded with the OpenTelemetry transformer's own generated protobuf types) or JSON,
// keeping every span and log record it was sent, flattened for assertions.
import { once } from 'node:events';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';

interface ProtoType {
  decode(data: Uint8Array): unknown;
  toObject(message: unknown, options: Record<string, unknown>): unknown;
}
const require = createRequire(import.meta.url);
// The package's own generated protobuf types (it exports serializers only for what it sends).
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: ProtoType } }; logs: { v1: { ExportLogsServiceRequest: ProtoType } } } } };
};
const { ExportTraceServiceRequest } = root.opentelemetry.proto.collector.trace.v1;
const { ExportLogsServiceRequest } = root.opentelemetry.proto.collector.logs.v1;

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  /** When it started and ended, in nanoseconds since the epoch. */
  start: bigint;
  end: bigint;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code: number; message?: string };
}

export interface ReceivedLog {
  service: string;
  eventName: string | undefined;
  body: unknown;
}

export const SERVER = 2;
export const CLIENT = 3;

type Json = Record<string, unknown>;

/** An OTLP AnyValue as a plain value. */
function valueOf(any: unknown): unknown {
  const v = (any ?? {}) as Json;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('arrayValue' in v) return (((v.arrayValue as Json).values as unknown[]) ?? []).map(valueOf);
  if ('kvlistValue' in v) return attributesOf((v.kvlistValue as Json).values);
  return undefined;
}

function attributesOf(list: unknown): Record<string, unknown> {
  return Object.fromEntries(((list as { key: string; value: unknown }[] | undefined) ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

/** Ids are bytes in protobuf (base64 after toObject) and hex in OTLP JSON. */
function hexId(id: unknown, binary: boolean): string | undefined {
  if (typeof id !== 'string' || id === '') return undefined;
  return binary ? Buffer.from(id, 'base64').toString('hex') : id.toLowerCase();
}

export interface OtlpReceiver {
  /** The base URL, as `tracing.otlp.endpoint` takes it. */
  url: string;
  spans: ReceivedSpan[];
  logs: ReceivedLog[];
  /** The content type of every request received. */
  contentTypes: string[];
  waitFor(predicate: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const logs: ReceivedLog[] = [];
  const contentTypes: string[] = [];
  const received = new EventEmitter();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      contentTypes.push(type);
      const binary = type.includes('protobuf');
      const signal = req.url === '/v1/traces' ? ExportTraceServiceRequest : req.url === '/v1/logs' ? ExportLogsServiceRequest : undefined;
      if (!signal) return void res.writeHead(404).end();
      const message = (binary ? signal.toObject(signal.decode(body), { longs: String, bytes: String, defaults: false }) : JSON.parse(body.toString('utf8'))) as Json;
      if (req.url === '/v1/traces') {
        for (const resource of (message.resourceSpans as Json[]) ?? []) {
          const service = String(attributesOf((resource.resource as Json | undefined)?.attributes)['service.name']);
          for (const scope of (resource.scopeSpans as Json[]) ?? []) {
            for (const span of (scope.spans as Json[]) ?? []) {
              spans.push({
                service,
                traceId: hexId(span.traceId, binary)!,
                spanId: hexId(span.spanId, binary)!,
                parentSpanId: hexId(span.parentSpanId, binary),
                name: String(span.name),
                kind: Number(span.kind),
                start: BigInt(String(span.startTimeUnixNano ?? 0)),
                end: BigInt(String(span.endTimeUnixNano ?? 0)),
                attributes: attributesOf(span.attributes),
                events: ((span.events as Json[]) ?? []).map((e) => ({ name: String(e.name), attributes: attributesOf(e.attributes) })),
                status: { code: Number((span.status as Json | undefined)?.code ?? 0), ...((span.status as Json | undefined)?.message ? { message: String((span.status as Json).message) } : {}) },
              });
            }
          }
        }
      } else {
        for (const resource of (message.resourceLogs as Json[]) ?? []) {
          const service = String(attributesOf((resource.resource as Json | undefined)?.attributes)['service.name']);
          for (const scope of (resource.scopeLogs as Json[]) ?? []) {
            for (const record of (scope.logRecords as Json[]) ?? []) logs.push({ service, eventName: record.eventName as string | undefined, body: valueOf(record.body) });
          }
        }
      }
      res.writeHead(200, { 'content-type': binary ? 'application/x-protobuf' : 'application/json' }).end(binary ? undefined : '{}');
      received.emit('data');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    logs,
    contentTypes,
    waitFor(predicate, what, timeoutMs = 15_000) {
      if (predicate()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          received.off('data', check);
          reject(new Error(`timed out waiting for ${what}`));
        }, timeoutMs);
        function check(): void {
          if (!predicate()) return;
          clearTimeout(timer);
          received.off('data', check);
          resolve();
        }
        received.on('data', check);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
