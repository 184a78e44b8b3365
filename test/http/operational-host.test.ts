// The Host check of the operational paths (/healthz, /readyz, metrics) against DNS rebinding: a
// Host the gateway answers to, or an IP literal (a probe's or a scraper's pod address), which a
// page on a rebinding domain never sends (its Host is its own DNS name).
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { checkOperationalHost, isIpLiteralHost, metricsHostsOf } from '../../src/http/guards.js';
import { fromIncoming } from '../../src/http/input.js';

/** A GET as Node's server hands it over, with this Host header (none when undefined). */
function incoming(host: string | undefined): IncomingMessage {
  const headers = host === undefined ? {} : { host };
  return Object.assign(new Readable({ read() {} }), { url: '/healthz', method: 'GET', headers }) as unknown as IncomingMessage;
}

describe('isIpLiteralHost', () => {
  it('takes an IPv4 address in dotted decimal or a bracketed IPv6 address, with or without port', () => {
    for (const host of ['127.0.0.1', '127.0.0.1:8080', '10.1.2.3:8080', '0.0.0.0', '255.255.255.255:1', '192.168.1.1:', '[::1]', '[::1]:8080', '[fd00::1]', '[FD00::A:1]:443', '[::ffff:10.1.2.3]:80']) {
      expect(isIpLiteralHost(host), host).toBe(true);
    }
  });

  it('refuses DNS names, names that begin with an address, and near misses', () => {
    const refused = ['evil.example', 'localhost', 'localhost:8080', '127.0.0.1.evil.example', '127.0.0.1.nip.io:80', '10.1.2.3x', 'x10.1.2.3', '1.2.3', '1.2.3.4.5', '256.1.1.1', '1.2.3.999:80', '0x7f.0.0.1', '1.2.3.4:80x', '1.2.3.4:80:80', ' 1.2.3.4', '1.2.3.4 '];
    const v6 = ['::1', '::1:8080', '[::1', '::1]', '[::1].evil.example', '[::1]x', '[::1]:80x', '[evil.example]', '[1::2::3]', '[fe80::1%25eth0]', '[]', ''];
    for (const host of [...refused, ...v6]) expect(isIpLiteralHost(host), host).toBe(false);
  });
});

describe('checkOperationalHost', () => {
  const allowed = new Set(['localhost', '127.0.0.1', '::1', 'mcp.internal.example']);

  it('passes a Host checkHost passes, or an IP literal', () => {
    for (const host of ['localhost', 'LOCALHOST:9', 'mcp.internal.example:8443', '127.0.0.2', '10.1.2.3:8080', '[::1]:80', '[fd00::1]']) {
      expect(checkOperationalHost(fromIncoming(incoming(host)), allowed), host).toBeUndefined();
    }
  });

  it('refuses any other Host, and none at all, 403 as the Host check does', async () => {
    for (const host of ['evil.example', '127.0.0.1.evil.example', 'localhost.evil.example:80', undefined]) {
      const refused = checkOperationalHost(fromIncoming(incoming(host)), allowed);
      expect(refused?.status, String(host)).toBe(403);
      expect(await refused!.text()).toMatch(/Host not allowed/);
    }
  });
});

describe('metricsHostsOf', () => {
  const config = (metricsHost: string) =>
    configFromObject({ listen: { host: 'gw.internal.example', publicUrl: 'https://gateway.example.com/mcp', allowedHosts: ['MCP.Internal.Example'], allowUnauthenticated: true }, metrics: { enabled: true, port: 0, host: metricsHost }, upstreams: {} }, { file: 'gateway.yaml', env: {} });

  it("is the loopback names, listen.allowedHosts and the metrics listener's own concrete address", () => {
    const named = config('metrics.internal.example');
    expect([...metricsHostsOf(named.listen, named.metrics.host)].sort()).toEqual(['127.0.0.1', '::1', 'localhost', 'mcp.internal.example', 'metrics.internal.example']);
    const bracketed = config('[fd00::9]');
    expect(metricsHostsOf(bracketed.listen, bracketed.metrics.host).has('fd00::9')).toBe(true);
  });

  it('leaves a wildcard bind address out', () => {
    for (const wildcard of ['0.0.0.0', '::', '[::]']) {
      const any = config(wildcard);
      expect([...metricsHostsOf(any.listen, any.metrics.host)].sort(), wildcard).toEqual(['127.0.0.1', '::1', 'localhost', 'mcp.internal.example']);
    }
  });
});
