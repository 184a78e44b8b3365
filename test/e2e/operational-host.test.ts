// The Host check of the paths probes and scrapers reach (/healthz, /readyz, metrics), on the main
// listener and on the separate metrics listener (metrics.port): against DNS rebinding, a page on
// a rebinding domain must not read them from a developer's local gateway. Such a page's requests
// always carry its own DNS name in Host, never an IP literal, so besides the names the gateway
// answers to, an IP literal is accepted (kubelet and Prometheus send the pod's address).
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { httpExchange as exchange } from '../helpers/raw-http.js';

// Hosts a rebinding page may send, and near misses of an IP literal (a Host no URL parser takes,
// such as `[::1].evil.example`, is refused 400 by the HTTP adapter before any handler).
const FOREIGN = ['evil.example', '127.0.0.1.evil.example', 'evil.example:8080', '10.1.2.3.nip.io', 'localhost.evil.example', '1.2.3.4x', '999.1.2.3'];
const accepted = (port: string): string[] => [`127.0.0.1:${port}`, '10.1.2.3:8080', '10.1.2.3', `[::1]:${port}`, '[fd00::1]', 'localhost', `localhost:${port}`];

/** GET `path` with exactly this Host; the status. */
async function statusWithHost(url: URL, path: string, host: string): Promise<number> {
  return (await exchange(url, { method: 'GET', path, headers: { host } })).status;
}

/** An HTTP/1.0 GET without a Host header (node:http always sends one); the status line's code. */
function statusWithoutHost(url: URL, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(Buffer.concat(chunks).toString('latin1'));
      if (match) resolve(Number(match[1]));
      else reject(new Error('no status line'));
    });
    socket.write(`GET ${path} HTTP/1.0\r\n\r\n`);
  });
}

async function expectStatuses(url: URL, path: string, hosts: string[], status: number): Promise<void> {
  for (const host of hosts) expect(await statusWithHost(url, path, host), `${path} with Host ${host}`).toBe(status);
}

describe('the operational paths on the main listener', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ listen: { allowedHosts: ['mcp.internal.example'] }, metrics: { enabled: true }, upstreams: {} });
  });

  afterAll(async () => {
    await gw?.close();
  });

  for (const path of ['/healthz', '/readyz', '/metrics']) {
    it(`refuses ${path} under a DNS name the gateway does not answer to, with the Host refusal`, async () => {
      for (const host of FOREIGN) {
        const reply = await exchange(gw.url, { method: 'GET', path, headers: { host } });
        expect(reply.status, `${path} with Host ${host}`).toBe(403);
        expect(reply.text, `${path} with Host ${host}`).toMatch(/Host not allowed/);
        expect(reply.text).not.toMatch(/upstreams|switchyard_/);
      }
    });

    it(`answers ${path} under an IP literal (a probe's pod address), a loopback name or an allowed host`, async () => {
      await expectStatuses(gw.url, path, [...accepted(gw.url.port), 'mcp.internal.example', 'MCP.Internal.Example:8443'], 200);
    });
  }

  it('refuses a request without a Host (HTTP/1.0) as the MCP endpoint does', async () => {
    expect(await statusWithoutHost(gw.url, '/healthz')).toBe(403);
    expect(await statusWithoutHost(gw.url, '/metrics')).toBe(403);
  });
});

describe('the separate metrics listener (metrics.port)', () => {
  let gw: TestGateway;
  let metricsUrl: URL;

  beforeAll(async () => {
    gw = await startGateway({ listen: { allowedHosts: ['mcp.internal.example'] }, metrics: { enabled: true, port: 0 }, upstreams: {} });
    metricsUrl = gw.gateway.metricsUrl()!;
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('refuses the metrics under a DNS name the gateway does not answer to, with the Host refusal', async () => {
    for (const host of FOREIGN) {
      const reply = await exchange(metricsUrl, { method: 'GET', headers: { host } });
      expect(reply.status, `Host ${host}`).toBe(403);
      expect(reply.text, `Host ${host}`).toMatch(/Host not allowed/);
    }
  });

  it('serves the metrics under an IP literal, a loopback name or a host of listen.allowedHosts', async () => {
    await expectStatuses(metricsUrl, metricsUrl.pathname, [...accepted(metricsUrl.port), 'mcp.internal.example'], 200);
    const reply = await exchange(metricsUrl, { method: 'GET', headers: { host: '10.1.2.3:9090' } });
    expect(reply.text).toMatch(/^# HELP /m);
  });

  it('refuses a request without a Host (HTTP/1.0)', async () => {
    expect(await statusWithoutHost(metricsUrl, metricsUrl.pathname)).toBe(403);
  });
});
