// What the MCP endpoint answers with: a web Response (SSE streams, refusals), or on the hot path
// a JsonReply, which the Node listener writes to the socket as it is: no Response, no Headers
// object, no body stream for an answer that is one string. Hono's routes turn either into a
// Response (in-process `app.request`, and requests the direct path leaves to Hono).
import type { ServerResponse } from 'node:http';

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

export type Reply = Response | JsonReply;

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
  return reply instanceof JsonReply ? reply.toResponse() : reply;
}

/**
 * Writes a reply to a Node response, with `extra` headers of the edge (request id, CORS) beside
 * its own (which win). A Response's body is piped with backpressure; when the client goes away
 * first the body is cancelled, which is how an SSE connection learns it is gone.
 */
export async function writeReply(reply: Reply, res: ServerResponse, extra?: Readonly<Record<string, string>>): Promise<void> {
  if (reply instanceof JsonReply) {
    if (reply.body === null) {
      res.writeHead(reply.status, extra ? { ...extra, ...reply.headers } : reply.headers).end();
      return;
    }
    // end() with the whole body sets Content-Length: headers and body leave in one write. The
    // common answer's headers go as one flat list, which Node takes without merging objects.
    res.writeHead(reply.status, reply.headers ? { ...extra, 'content-type': 'application/json', ...reply.headers } : jsonHeaders(extra)).end(reply.body);
    return;
  }
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

/** Content-Type and the edge's headers as [name, value, name, value, ...]. */
function jsonHeaders(extra: Readonly<Record<string, string>> | undefined): string[] {
  const headers = ['content-type', 'application/json'];
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
