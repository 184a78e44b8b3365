// The deprecated HTTP+SSE transport of protocol 2024-11-05, for upstreams that still speak it:
// a GET opens an SSE stream whose first `endpoint` event names the URL to POST messages to;
// every server message arrives on that stream.
import { request, type Dispatcher } from 'undici';
import type { JsonRpcMessage } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';
import { consumeSse, contentTypeOf, decodeMessages, networkError } from './http-common.js';
import { TransportError, type Transport } from './types.js';

export interface LegacySseOptions {
  url: string;
  headers: Readonly<Record<string, string>>;
  dispatcher: Dispatcher;
  logger: Logger;
  maxMessageBytes?: number;
}

export class LegacySseTransport implements Transport {
  readonly #options: LegacySseOptions;
  readonly #abort = new AbortController();
  #endpoint: string | undefined;
  #closed = false;
  #ended = false;

  onmessage?: Transport['onmessage'];
  onerror?: Transport['onerror'];
  onclose?: Transport['onclose'];

  constructor(options: LegacySseOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(this.#options.url, {
        method: 'GET',
        dispatcher: this.#options.dispatcher,
        headers: { ...this.#options.headers, accept: 'text/event-stream' },
        signal: this.#abort.signal,
      });
    } catch (err) {
      throw networkError(err);
    }
    if (response.statusCode !== 200 || contentTypeOf(response.headers) !== 'text/event-stream') {
      await response.body.dump();
      throw new TransportError('http_status', `SSE endpoint answered HTTP ${response.statusCode}`, response.statusCode);
    }
    await new Promise<void>((resolve, reject) => {
      const stream = consumeSse(response.body, this.#options.maxMessageBytes ?? 16 * 1024 * 1024, (event) => {
        if (event.event === 'endpoint' && this.#endpoint === undefined) {
          const endpoint = new URL(event.data, this.#options.url);
          // Messages carry the upstream's credentials: never post them to another origin.
          if (endpoint.origin !== new URL(this.#options.url).origin) {
            reject(new TransportError('http_status', 'SSE endpoint event names another origin'));
            return;
          }
          this.#endpoint = endpoint.href;
          resolve();
        } else if (event.event === 'message' && event.data !== '') {
          for (const message of decodeMessages(event.data)) this.onmessage?.(message);
        }
      });
      stream.then(
        () => this.#end(new TransportError('closed', 'upstream closed the SSE stream')),
        (err: unknown) => this.#end(this.#closed ? undefined : networkError(err)),
      );
      stream.finally(() => reject(new TransportError('closed', 'SSE stream ended before the endpoint event'))).catch(() => {});
    });
  }

  async send(message: JsonRpcMessage): Promise<void> {
    if (this.#closed || this.#endpoint === undefined) throw new TransportError('closed', 'transport closed');
    let response: Dispatcher.ResponseData;
    try {
      response = await request(this.#endpoint, {
        method: 'POST',
        dispatcher: this.#options.dispatcher,
        headers: { ...this.#options.headers, 'content-type': 'application/json' },
        body: JSON.stringify(message),
        signal: this.#abort.signal,
      });
    } catch (err) {
      throw networkError(err);
    }
    await response.body.dump();
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new TransportError('http_status', `upstream answered HTTP ${response.statusCode}`, response.statusCode);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    this.#end(undefined);
  }

  #end(reason: Error | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#closed = true;
    this.onclose?.(reason);
  }
}
