// An HTTP request over a raw TCP socket that then never reads its response: the slow (or
// hostile) client of the hostile-load tests. The kernel's buffers fill, then the gateway's.
import { connect, type Socket } from 'node:net';

export interface UnreadRequest {
  socket: Socket;
  /** Resolves when the gateway closed the connection (or reset it). */
  closed: Promise<void>;
  destroy(): void;
}

/** Sends one HTTP/1.1 request to `url` and stops reading: nothing of the answer is ever taken. */
export async function sendAndNeverRead(url: URL, method: string, headers: Record<string, string>, body?: string): Promise<UnreadRequest> {
  const socket = connect({ host: url.hostname, port: Number(url.port), allowHalfOpen: true });
  socket.pause();
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
    socket.on('error', () => {});
  });
  const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push(`content-length: ${Buffer.byteLength(body)}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n${body ?? ''}`);
  return { socket, closed, destroy: () => socket.destroy() };
}
