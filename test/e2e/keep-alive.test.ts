// listen.keepAliveTimeout: how long an idle client connection waits for its next request. The
// default outlasts a load balancer's usual 60 s idle timeout (Node's own would close after 5 s).
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

/** A raw connection to the gateway, which never closes on its own (unlike an HTTP agent). */
async function open(url: URL): Promise<Socket> {
  const socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return socket;
}

/** Sends GET /healthz on `socket` and resolves to the head of its response once the body is in. */
function health(socket: Socket, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, end))?.[1]);
      if (text.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve(text.slice(0, end));
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  });
}

describe('listen.keepAliveTimeout', () => {
  it('keeps an idle connection 65 s by default, and says so', async () => {
    gw = await startGateway({ upstreams: {} });
    const socket = await open(gw.url);
    try {
      expect(await health(socket, gw.url.host)).toMatch(/\r\nkeep-alive: timeout=65\r\n/i);
    } finally {
      socket.destroy();
    }
  });

  it('serves the next request on the same connection, and closes it once idle for the configured time', async () => {
    gw = await startGateway({ listen: { port: 0, keepAliveTimeout: '1s' }, upstreams: {} });
    const socket = await open(gw.url);
    try {
      expect(await health(socket, gw.url.host)).toMatch(/\r\nkeep-alive: timeout=1\r\n/i);
      expect(await health(socket, gw.url.host)).toMatch(/^HTTP\/1\.1 200 /);
      // The gateway ends the idle connection (the test's own timeout bounds the wait).
      await new Promise((resolve) => socket.once('end', resolve).resume());
    } finally {
      socket.destroy();
    }
  });
});
