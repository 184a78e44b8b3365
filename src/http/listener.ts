// An HTTP or HTTPS listener for a fetch handler. With TLS, the certificate files are watched:
// a renewed certificate (cert-manager, certbot) is loaded for new connections without a restart,
// while open connections and sessions carry on. A drain answers new requests 503 before anything
// reads them (a load balancer may send them to another replica) until close().
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { createSecureContext, type TLSSocket } from 'node:tls';
import { getRequestListener, type ServerType } from '@hono/node-server';
import { failure } from '../mcp/jsonrpc.js';
import { LinkedList, type Linked } from '../util/linked-list.js';
import type { Logger } from '../util/log.js';
import { refusals } from './refusals.js';

export interface TlsFiles {
  cert: string;
  key: string;
  ca?: string;
}

export interface ListenerOptions {
  fetch: (request: Request) => Response | Promise<Response>;
  /** Tried first for every request; returns false to leave it to `fetch` (app.ts, HttpApp.direct). */
  direct?: (incoming: IncomingMessage, outgoing: ServerResponse) => boolean;
  host: string;
  port: number;
  path: string;
  maxHeaderBytes?: number;
  /** How long an idle connection is kept for its next request (Node's default otherwise: 5 s). */
  keepAliveTimeoutMs?: number;
  tls?: TlsFiles;
  logger: Logger;
  /** What is still served while draining (health probes, a session busy here); every other request then gets 503. */
  servedWhileDraining?: (path: string, incoming: IncomingMessage) => boolean;
  /**
   * Whether a request (not a GET) opens a long-lived subscription stream (a 2026-07-28
   * subscriptions/listen): counted in `unanswered` only until its answer begins, as a GET
   * stream never is; the drain ends such streams itself.
   */
  subscription?: (incoming: IncomingMessage) => boolean;
  /**
   * With mutual TLS (tls.ca): the answer to a request on a connection that presented no valid
   * client certificate, for the paths it names (probes: a kubelet presents none); every other
   * request on such a connection is refused 403.
   */
  withoutCertificate?: (path: string) => { status: number; body: object } | undefined;
}

export interface Listener {
  url: URL;
  server: ServerType;
  /**
   * Drains: from now on every new request but those servedWhileDraining names is answered 503
   * with Retry-After and Connection: close before anything reads its body, so a load balancer
   * may send it to another replica (it was provably not processed). Requests in progress go on,
   * and their responses not yet begun close their connection once sent. Connections are still
   * accepted and idle ones kept until close(): a close never crosses a request a balancer just
   * sent on a pooled connection.
   */
  drain(): void;
  /**
   * Requests other than GET whose response has not ended: a drain waits for them too (one may
   * still be reading its body or taking its session over, before the router counts it). A
   * subscription stream counts only until its answer begins (its head sent: the stream is open).
   */
  readonly unanswered: number;
  /** Stops accepting connections; resolves when the last one is gone. */
  close(): Promise<void>;
}

async function readTls(files: TlsFiles): Promise<{ cert: Buffer; key: Buffer; ca?: Buffer }> {
  const [cert, key, ca] = await Promise.all([readFile(files.cert), readFile(files.key), files.ca ? readFile(files.ca) : undefined]);
  return ca ? { cert, key, ca } : { cert, key };
}

export async function startListener(options: ListenerOptions): Promise<Listener> {
  const { fetch, host, port, path, tls, logger } = options;
  const material = tls ? await readTls(tls) : undefined;
  const viaFetch = getRequestListener(fetch, { hostname: host });
  const direct = options.direct;
  const served: RequestListener = direct ? (incoming, outgoing) => direct(incoming, outgoing) || void viaFetch(incoming, outgoing) : viaFetch;
  // GET streams are left out: they end when the drain hangs them up, after it waited. So are
  // subscription streams once open (their head sent): the drain ends them, waiting for neither.
  const unanswered = new Unanswered();
  const subscriptions = new Unanswered();
  const subscription = options.subscription ?? (() => false);
  const servedWhileDraining = options.servedWhileDraining ?? (() => false);
  let draining = false;
  const mutual = material?.ca !== undefined;
  const listener: RequestListener = (incoming, outgoing) => {
    if (mutual && !(incoming.socket as TLSSocket).authorized) return answerWithoutCertificate(outgoing, options.withoutCertificate?.(pathOf(incoming.url)));
    if (draining) {
      outgoing.shouldKeepAlive = false;
      if (!servedWhileDraining(pathOf(incoming.url), incoming)) return refuseDraining(outgoing);
    }
    if (incoming.method !== 'GET') {
      if (subscription(incoming)) subscriptions.add(outgoing);
      else unanswered.add(outgoing);
    }
    served(incoming, outgoing);
  };
  const serverOptions = options.maxHeaderBytes ? { maxHeaderSize: options.maxHeaderBytes } : {};
  const server: ServerType = material
    ? // A client without a certificate completes the handshake, and its requests are answered
      // (probes) or refused 403 by the listener: never passed on.
      createHttpsServer({ ...serverOptions, ...material, requestCert: mutual, rejectUnauthorized: false }, listener)
    : createHttpServer(serverOptions, listener);
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  const address = await new Promise<AddressInfo>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
  // Once listening, an error of the server (accept failing under EMFILE) is logged; the process
  // and the connections already open carry on.
  server.on('error', (err) => logger.error('listener error', { err }));
  const stopWatching = tls ? watchCertificates(server as HttpsServer, tls, logger) : () => {};
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: new URL(`${tls ? 'https' : 'http'}://${shownHost}:${address.port}${path}`),
    get unanswered() {
      let opening = 0;
      subscriptions.forEach((outgoing) => {
        if (!outgoing.headersSent) opening++;
      });
      return unanswered.size + opening;
    },
    drain() {
      draining = true;
      const closeAfter = (outgoing: ServerResponse): void => {
        if (!outgoing.headersSent) outgoing.shouldKeepAlive = false;
      };
      unanswered.forEach(closeAfter);
      subscriptions.forEach(closeAfter);
    },
    close() {
      stopWatching();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
    },
  };
}

/**
 * Responses not yet ended, each in a list (util/linked-list.ts) until its 'close' unlinks it.
 * Not a Set: its table, rebuilt as responses come and go, kept answered requests (and all they
 * reach) alive for the young-generation collector: 3.5 KB per call promoted, GC pauses of 10 µs
 * per call (bench/HISTORY.md, "Fifteenth pass").
 */
class Unanswered {
  readonly #list = new LinkedList<UnansweredEntry>();

  get size(): number {
    return this.#list.size;
  }

  /** Counts `outgoing` until its 'close' (its end, or the client gone). */
  add(outgoing: ServerResponse): void {
    const entry: UnansweredEntry = { outgoing, prev: undefined, next: undefined };
    this.#list.add(entry);
    outgoing.on('close', () => this.#list.delete(entry));
  }

  forEach(each: (outgoing: ServerResponse) => void): void {
    this.#list.forEach((entry) => each(entry.outgoing));
  }
}

interface UnansweredEntry extends Linked<UnansweredEntry> {
  readonly outgoing: ServerResponse;
}

const DRAINING_BODY = JSON.stringify(failure(null, { code: refusals.shuttingDown.code, message: refusals.shuttingDown.message }));

/** The answer to a request that came while draining: nothing of it was read, so it may be sent elsewhere. */
function refuseDraining(outgoing: ServerResponse): void {
  outgoing.writeHead(503, { ...refusals.shuttingDown.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(DRAINING_BODY), connection: 'close' });
  outgoing.end(DRAINING_BODY);
}

const NO_CERTIFICATE_BODY = JSON.stringify({ error: 'a client certificate signed by the CA of listen.tls.ca is required' });

/** A request on a connection without a valid client certificate: `answer` (a probe's), else 403; the connection then closes. */
function answerWithoutCertificate(outgoing: ServerResponse, answer: { status: number; body: object } | undefined): void {
  const body = answer ? JSON.stringify(answer.body) : NO_CERTIFICATE_BODY;
  outgoing.writeHead(answer?.status ?? 403, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  outgoing.end(body);
}

function pathOf(url: string | undefined): string {
  const target = url ?? '/';
  const query = target.indexOf('?');
  return query === -1 ? target : target.slice(0, query);
}

/**
 * Reloads the certificate when any of its files changes (their directories are watched).
 * Returns the function that stops watching (no reload runs after it).
 */
function watchCertificates(server: HttpsServer, files: TlsFiles, logger: Logger): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const reload = async (): Promise<void> => {
    try {
      const material = await readTls(files);
      if (stopped) return;
      createSecureContext(material); // throws on a mismatched or half-written pair
      server.setSecureContext(material);
      logger.info('TLS certificate reloaded', { cert: files.cert });
    } catch (err) {
      logger.warn('TLS certificate reload failed; keeping the current one', { err });
    }
  };
  const directories = new Set([files.cert, files.key, ...(files.ca ? [files.ca] : [])].map((file) => dirname(file)));
  const watchers: FSWatcher[] = [];
  for (const directory of directories) {
    try {
      watchers.push(
        watch(directory, { persistent: false }, () => {
          clearTimeout(timer);
          timer = setTimeout(() => void reload(), 100);
        }),
      );
    } catch (err) {
      logger.warn('cannot watch the TLS files; renewals need a restart', { err, directory });
    }
  }
  return () => {
    stopped = true;
    clearTimeout(timer);
    for (const watcher of watchers) watcher.close();
  };
}
