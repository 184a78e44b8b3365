// What both HTTP transports share: SSE stream consumption, JSON decoding, bounded error bodies,
// the ping that tells whether an upstream still knows a session, trace headers, errors.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { isObject, parseMessage, type JsonRpcMessage } from '../mcp/jsonrpc.js';
import { parseTraceparent, parseTracestate } from '../util/trace.js';
import { SseParser, type SseEvent } from '../util/sse.js';
import { namesLostSession } from './get-stream.js';
import { systemCodeOf, TransportError } from './types.js';

/** The most of an error body read to learn what it says (the rest is never read). */
export const ERROR_BODY_BYTES = 64 * 1024;
/** How long a session probe (sessionAnswers) waits for its answer. */
const PROBE_TIMEOUT_MS = 10_000;

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

/**
 * The start of `body` as text, `max` bytes at most; the body is destroyed after, so an upstream's
 * endless or huge error body costs no more than that. A body that breaks off gives what came.
 */
export async function readStart(body: Readable, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  // Destroyed before its end, undici's body emits an error; nobody but this listener hears it.
  body.on('error', () => {});
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      const room = max - length;
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      length += Math.min(chunk.length, room);
      if (length >= max) break;
    }
  } catch {
    // What came before the break is what there is to read.
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks, length).toString('utf8');
}

/** Where a probe goes: the endpoint, and the headers of a POST in the session (its id, version, credential). */
export interface ProbeTarget {
  origin: string;
  path: string;
  headers: Record<string, string>;
}

/**
 * Whether the upstream still knows the session a POST's headers carry, asked with a ping (either
 * party may ping at any time, lifecycle.mdx): false when the answer says the session is gone (404,
 * or a 400 naming it), true for a 2xx, undefined when nothing can be told (no answer, another
 * status). Its answer's body is never read beyond ERROR_BODY_BYTES.
 */
export async function sessionAnswers(dispatcher: Dispatcher, target: ProbeTarget, stop: AbortSignal): Promise<boolean | undefined> {
  const ping = JSON.stringify({ jsonrpc: '2.0', id: `switchyard-probe-${randomUUID()}`, method: 'ping' });
  try {
    const { statusCode, body } = await dispatcher.request({ ...target, method: 'POST', body: ping, signal: AbortSignal.any([stop, AbortSignal.timeout(PROBE_TIMEOUT_MS)]) });
    let text = '';
    if (statusCode === 400) text = await readStart(body, ERROR_BODY_BYTES);
    else void body.dump().catch(() => {}); // not waited for (an SSE answer may stay open); bounded by undici, and the timeout
    if (namesLostSession(statusCode, text)) return false;
    return statusCode >= 200 && statusCode < 300 ? true : undefined;
  } catch {
    return undefined;
  }
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

/** `headers` without any header named `name` in any letter case (HTTP header names are case-insensitive). */
export function withoutHeader(headers: Readonly<Record<string, string>>, name: string | undefined): Readonly<Record<string, string>> {
  if (name === undefined) return headers;
  const lower = name.toLowerCase();
  return Object.fromEntries(Object.entries(headers).filter(([key]) => key.toLowerCase() !== lower));
}

/** No headers to add: one object, so a caller can tell "none" by identity. */
export const NO_HEADERS: Readonly<Record<string, string>> = {};

/**
 * W3C trace context of a request's `_meta`, mirrored in HTTP headers for tracing proxies.
 * Validated again here, whoever built the message: a header value comes from a client's `_meta`
 * and must never carry CR/LF or control characters; an invalid one is left out.
 */
export function traceHeaders(message: JsonRpcMessage): Readonly<Record<string, string>> {
  const meta = 'params' in message ? message.params?._meta : undefined;
  if (!isObject(meta)) return NO_HEADERS;
  const traceparent = parseTraceparent(meta.traceparent);
  if (traceparent === undefined) return NO_HEADERS;
  const tracestate = parseTracestate(meta.tracestate);
  return tracestate === undefined ? { traceparent } : { traceparent, tracestate };
}
