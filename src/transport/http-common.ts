// What both HTTP transports share: bounded body reads, SSE stream consumption, JSON decoding.
import type { Readable } from 'node:stream';
import { parseMessage, type JsonRpcMessage } from '../mcp/jsonrpc.js';
import { SseParser, type SseEvent } from '../util/sse.js';
import { TransportError } from './types.js';

/** Reads a whole body, failing once it exceeds `max` bytes. Events, not an async iterator: this is on every call's path. */
export function readBounded(body: Readable, max: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const cleanup = (): void => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length > max) {
        cleanup();
        body.destroy();
        reject(new TransportError('oversized', `upstream response exceeds ${max} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    // Destroyed without an error (an abort undici reports as close): never leave the caller waiting.
    const onClose = (): void => {
      cleanup();
      reject(new TransportError('network', 'upstream response ended early'));
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
    body.on('close', onClose);
  });
}

/** JSON-RPC messages in a JSON body (one message or a batch); invalid entries are dropped. */
export function decodeMessages(text: string): JsonRpcMessage[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  const items = Array.isArray(value) ? value : [value];
  const out: JsonRpcMessage[] = [];
  for (const item of items) {
    const message = parseMessage(item);
    if (message) out.push(message);
  }
  return out;
}

/** Feeds every SSE event of `body` to `onEvent` until the stream ends. */
export async function consumeSse(body: Readable, maxLine: number, onEvent: (event: SseEvent) => void, parser = new SseParser(maxLine)): Promise<SseParser> {
  for await (const chunk of body as AsyncIterable<Buffer>) {
    let events: SseEvent[];
    try {
      events = parser.push(chunk);
    } catch (err) {
      body.destroy();
      throw new TransportError('oversized', 'upstream SSE event exceeds the size limit', undefined, { cause: err });
    }
    for (const event of events) onEvent(event);
  }
  return parser;
}

export function contentTypeOf(headers: Record<string, string | string[] | undefined>): string {
  const value = headers['content-type'];
  const first = Array.isArray(value) ? value[0] : value;
  if (first === 'application/json' || first === 'text/event-stream') return first;
  return (first ?? '').split(';')[0]!.trim().toLowerCase();
}

export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function networkError(err: unknown): TransportError {
  if (err instanceof TransportError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new TransportError('network', `upstream unreachable: ${message}`, undefined, { cause: err });
}
