// A TCP proxy for tests, to cut a client's connections mid-stream.
import { createServer, connect as tcpConnect, type AddressInfo, type Server, type Socket } from 'node:net';

/** A TCP proxy in front of the gateway that can cut every connection through it at once. */
export interface CuttableProxy {
  url: URL;
  /** Destroys every socket currently open through the proxy, both sides. */
  cut(): number;
  /** Requests that went through carrying a Last-Event-ID header (the client resuming a stream). */
  resumptions(): number;
  close(): Promise<void>;
}

export async function startProxy(target: URL): Promise<CuttableProxy> {
  const sockets = new Set<Socket>();
  let resumptions = 0;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // a cut reaches the other side as ECONNRESET
  };
  const server: Server = createServer((client) => {
    const upstreamSocket = tcpConnect(Number(target.port), target.hostname);
    track(client);
    track(upstreamSocket);
    // Request heads are small and arrive whole on a local socket; good enough to count headers.
    client.on('data', (chunk: Buffer) => {
      resumptions += chunk.toString('latin1').match(/^last-event-id:/gim)?.length ?? 0;
    });
    client.pipe(upstreamSocket);
    upstreamSocket.pipe(client);
    client.on('close', () => upstreamSocket.destroy());
    upstreamSocket.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url,
    cut() {
      const count = sockets.size;
      for (const socket of sockets) socket.destroy();
      return count;
    },
    resumptions: () => resumptions,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
