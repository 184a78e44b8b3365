// Answers a POST that carried requests. The answer is plain JSON when the responses are ready
// before anything else needs saying, and becomes an SSE stream the moment a related message
// (progress, a log line, a server-initiated request) must go out first. Either form is allowed
// by the spec (basic/transports.mdx "Sending Messages to the Server", item 5).
import type { JsonRpcMessage, JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { RequestChannel } from '../router/router.js';
import { SseStream } from './sse-stream.js';

export interface RespondOptions {
  headers?: Record<string, string>;
  /** A batch answers with an array even when it holds one response. */
  batch?: boolean;
}

export function respond(run: (channel: RequestChannel) => Promise<(JsonRpcResponse | undefined)[]>, options: RespondOptions = {}): Promise<Response> {
  const headers = options.headers ?? {};
  return new Promise<Response>((resolve, reject) => {
    let stream: SseStream | undefined;
    const channel: RequestChannel = {
      send(message: JsonRpcMessage) {
        if (!stream) {
          stream = new SseStream(headers);
          resolve(stream.response);
        }
        stream.send(message);
      },
    };
    run(channel).then((results) => {
      const responses = results.filter((r): r is JsonRpcResponse => r !== undefined);
      if (stream) {
        for (const response of responses) stream.send(response);
        stream.close();
        return;
      }
      if (responses.length === 0) {
        // Every request was cancelled: no response is due, so the stream ends empty.
        const empty = new SseStream(headers);
        empty.close();
        resolve(empty.response);
        return;
      }
      const body = options.batch ? responses : responses[0];
      resolve(new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json', ...headers } }));
    }, (err: unknown) => {
      stream?.close();
      reject(err);
    });
  });
}
