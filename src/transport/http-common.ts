// What both HTTP transports share: SSE stream consumption, JSON decoding, errors.
import type { Readable } from 'node:stream';
import { parseMessage, type JsonRpcMessage } from '../mcp/jsonrpc.js';
import { SseParser, type SseEvent } from '../util/sse.js';
import { systemCodeOf, TransportError } from './types.js';

/** JSON-RPC messages in a JSON body (one message or a batch); invalid entries are dropped. */
export function decodeMessages(text: string): JsonRpcMessage[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(value)) {
    const message = parseMessage(value);
    return message ? [message] : [];
  }
  const out: JsonRpcMessage[] = [];
  for (const item of value) {
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
      throw sseOversized(err);
    }
    for (const event of events) onEvent(event);
  }
  return parser;
}

/** The error for an SSE line the parser refused as too long. */
export function sseOversized(cause: unknown): TransportError {
  return new TransportError('oversized', 'upstream SSE event exceeds the size limit', undefined, { cause });
}

export function contentTypeOf(headers: Record<string, string | string[] | undefined>): string {
  const value = headers['content-type'];
  return mediaType(Array.isArray(value) ? value[0] : value);
}

/** A Content-Type's media type, lower-case, without parameters ('' when there is none). */
export function mediaType(value: string | undefined): string {
  if (value === 'application/json' || value === 'text/event-stream') return value;
  return (value ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * A failed connection, said without the address or stack (the message reaches clients): the
 * system error code alone (ECONNREFUSED); the whole cause stays on the error for the log.
 */
export function networkError(err: unknown): TransportError {
  if (err instanceof TransportError) return err;
  const code = systemCodeOf(err);
  return new TransportError('network', code ? `upstream unreachable (${code})` : 'upstream unreachable', undefined, { cause: err });
}

/** What a token request's failure may say to a client: the endpoint's answer, never its address. */
export function publicTokenError(err: unknown): string {
  const message = err instanceof Error ? err.message : '';
  if (message.startsWith('token endpoint answered')) return message;
  const code = systemCodeOf(err);
  return code ? `token endpoint unreachable (${code})` : 'token endpoint failed';
}

