// What the MCP endpoint answers with: a web Response (refusals), or on the hot path a JsonReply,
// which the Node listener writes to the socket as it is (no Response, no Headers object, no body
// stream for an answer that is one string), or a POST's SSE stream, an SseConnection, which the
// listener writes straight to Node's response too. Hono's routes turn each into a Response
// (in-process `app.request`, and requests the direct path leaves to Hono).
import type { ServerResponse } from 'node:http';
import { SseConnection } from './sse-connection.js';

export class JsonReply {
  constructor(
    readonly status: number,
    /** The JSON text, or null for an empty body (202). */
    readonly body: string | null,
    readonly headers?: Readonly<Record<string, string>>,
  ) {}

  static json(value: unknown, headers?: Readonly<Record<string, string>>): JsonReply {
    return new JsonReply(200, JSON.stringify(value), headers);
  }

  static empty(status: number): JsonReply {
    return new JsonReply(status, null);
  }

  toResponse(): Response {
    if (this.body === null) return new Response(null, { status: this.status, ...(this.headers ? { headers: this.headers } : {}) });
    return new Response(this.body, { status: this.status, headers: { 'content-type': 'application/json', ...this.headers } });
  }
}

export type Reply = Response | JsonReply | SseConnection;

/**
 * Where an HTTP answer goes: the reply, or what went wrong (answered 500 by the caller), one of
 * them once. One sink is passed down the request's way instead of a pair of callbacks.
 */
export class ReplySink {
  constructor(
    readonly reply: (reply: Reply) => void,
    readonly fail: (err: unknown) => void,
  ) {}
}

/**
 * @hono/node-server replaces the global Response (when a listener starts) with a lighter class
 * whose `instanceof` runs a hook on every check; the platform's class, taken here before that,
 * answers for both kinds of Response without one. The hot path asks this several times per call.
 */
const PlatformResponse = globalThis.Response;

export function isWebResponse(value: unknown): value is Response {
  return value instanceof PlatformResponse;
}

export function toResponse(reply: Reply): Response {
  if (reply instanceof JsonReply) return reply.toResponse();
  return reply instanceof SseConnection ? reply.response : reply;
}

/**
 * Writes a reply to a Node response, with `extra` headers of the edge (request id, CORS) beside
 * its own (which win). A JsonReply (every call's answer) is written at once and an SSE stream
 * handed the response, with no promise; a Response's body is piped (the promise settles when it
 * is done).
 */
export function writeReply(reply: Reply, res: ServerResponse, extra?: Readonly<Record<string, string>>): Promise<void> | undefined {
  if (reply instanceof JsonReply) writeJson(reply, res, extra);
  else if (reply instanceof SseConnection) reply.writeTo(res, extra);
  else return pipeResponse(reply, res, extra);
  return undefined;
}

function writeJson(reply: JsonReply, res: ServerResponse, extra?: Readonly<Record<string, string>>): void {
  if (reply.body === null) {
    // An empty 202 says so, rather than as a chunked body with no chunks.
    const empty = reply.status === 204 || reply.status < 200 ? {} : { 'content-length': '0' };
    res.writeHead(reply.status, { ...extra, ...reply.headers, ...empty }).end();
    return;
  }
  // With Content-Length (which Node does not add once writeHead has run) the head and the body
  // leave in one write, with no chunk framing for the client to parse. The common answer's
  // headers go as one flat list, which Node takes without merging objects.
  const length = String(Buffer.byteLength(reply.body));
  res.writeHead(reply.status, reply.headers ? { ...extra, 'content-type': 'application/json', ...reply.headers, 'content-length': length } : jsonHeaders(extra, length)).end(reply.body);
}

/**
 * A Response's head, then its body piped with backpressure; when the client goes away first the
 * body is cancelled, which is how an SSE connection learns it is gone.
 */
async function pipeResponse(reply: Response, res: ServerResponse, extra?: Readonly<Record<string, string>>): Promise<void> {
  const headers: Record<string, string> = { ...extra };
  reply.headers.forEach((value, name) => (headers[name] = value));
  res.writeHead(reply.status, headers);
  const body = reply.body;
  if (!body) {
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = body.getReader();
  let gone = false;
  const onClose = (): void => {
    gone = true;
    reader.cancel().catch(() => {});
  };
  res.once('close', onClose);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || gone) break;
      if (!res.write(value)) await drained(res);
    }
  } catch {
    // The body failed: the client sees the connection end rather than a complete answer.
    res.destroy();
    return;
  } finally {
    res.off('close', onClose);
  }
  res.end();
}

/** Content-Type, Content-Length and the edge's headers as [name, value, name, value, ...]. */
function jsonHeaders(extra: Readonly<Record<string, string>> | undefined, length: string): string[] {
  const headers = ['content-type', 'application/json', 'content-length', length];
  for (const name in extra) headers.push(name, extra[name]!);
  return headers;
}

/** Resolves when the response can take more, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
