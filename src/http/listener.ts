// An HTTP or HTTPS listener for a fetch handler. With TLS, the certificate files are watched:
// a renewed certificate (cert-manager, certbot) is loaded for new connections without a restart,
// while open connections and sessions carry on.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import { getRequestListener, type ServerType } from '@hono/node-server';
import type { Logger } from '../util/log.js';

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
}

export interface Listener {
  url: URL;
  server: ServerType;
  /**
   * Stops accepting connections (they are refused: a balancer tries another replica) and closes
   * idle ones; requests and streams on open connections go on. close() still ends them.
   */
  stopAccepting(): void;
  /**
   * Requests other than GET whose response has not ended: a drain waits for them too (one may
   * still be reading its body or taking its session over, before the router counts it).
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
  // GET streams are left out: they end when the drain hangs them up, after it waited.
  let unanswered = 0;
  const answered = (): void => {
    unanswered--;
  };
  const listener: RequestListener = (incoming, outgoing) => {
    if (incoming.method !== 'GET') {
      unanswered++;
      outgoing.on('close', answered);
    }
    served(incoming, outgoing);
  };
  const serverOptions = options.maxHeaderBytes ? { maxHeaderSize: options.maxHeaderBytes } : {};
  const server: ServerType = material
    ? createHttpsServer({ ...serverOptions, ...material, requestCert: material.ca !== undefined, rejectUnauthorized: material.ca !== undefined }, listener)
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
  /** Set once the server stopped listening; `whenClosed` settles when its last connection is gone. */
  let stopped = false;
  let closed: () => void = () => {};
  const whenClosed = new Promise<void>((resolve) => (closed = resolve));
  return {
    server,
    url: new URL(`${tls ? 'https' : 'http'}://${shownHost}:${address.port}${path}`),
    get unanswered() {
      return unanswered;
    },
    stopAccepting() {
      if (!stopped) server.close(() => closed());
      stopped = true;
    },
    close() {
      stopWatching();
      return new Promise<void>((resolve) => {
        if (stopped) void whenClosed.then(resolve);
        else server.close(() => resolve());
        stopped = true;
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
    },
  };
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
