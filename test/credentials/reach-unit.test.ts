// The URL policy of per-user sign-in (src/credentials/reach.ts): which URLs an upstream's OAuth
// metadata may send the gateway to, judged from the upstream URL the operator configured.
import { describe, expect, it } from 'vitest';
import { reachOf, urlRefusal, type Reach } from '../../src/credentials/reach.js';
import { AddressGuard } from '../../src/util/address-guard.js';

const noDns = async (): Promise<string[]> => {
  throw new Error('no DNS in this test');
};
const reach = (upstream: string, resolve: (host: string) => Promise<string[]> = noDns): Promise<Reach> => reachOf(new URL(upstream), resolve);
const refusal = (target: string, r: Reach): string | undefined => urlRefusal(new URL(target), r);

describe('the reach of an upstream', () => {
  it('is public only, https only, for a public upstream (a name that resolves publicly, or does not resolve)', async () => {
    expect(await reach('https://mcp.example.com/mcp', async () => ['93.184.216.34'])).toEqual({ origin: 'https://mcp.example.com', also: [], http: false });
    expect(await reach('https://mcp.example.com/mcp')).toEqual({ origin: 'https://mcp.example.com', also: [], http: false });
    expect(await reach('http://93.184.216.34:8080/mcp')).toEqual({ origin: 'http://93.184.216.34:8080', also: [], http: false });
  });

  it('takes the class of a local upstream: loopback for 127.0.0.1, localhost and [::1], with plain http when it is http', async () => {
    expect(await reach('http://127.0.0.1:3000/mcp')).toEqual({ origin: 'http://127.0.0.1:3000', also: ['loopback'], http: true });
    expect(await reach('http://localhost:3000/mcp', async () => ['127.0.0.1', '::1'])).toMatchObject({ also: ['loopback'], http: true });
    expect(await reach('https://[::1]:3000/mcp')).toMatchObject({ also: ['loopback'], http: false });
  });

  it('takes the class of an internal upstream: private or link-local, by literal or by what its name resolves to', async () => {
    expect(await reach('https://10.1.2.3/mcp')).toMatchObject({ also: ['private'], http: false });
    expect(await reach('https://mcp.corp.internal/mcp', async () => ['10.1.2.3', 'fd00::5'])).toMatchObject({ also: ['private'], http: false });
    // Plain http to a private host is never "http on loopback".
    expect(await reach('http://192.168.1.5/mcp')).toMatchObject({ also: ['private'], http: false });
    expect(await reach('http://169.254.10.10/mcp')).toMatchObject({ also: ['link-local'], http: false });
  });
});

describe('which URLs an upstream may name', () => {
  it('a public https upstream: public https URLs only, nothing local, no plain http', async () => {
    const r = await reach('https://mcp.example.com/mcp', async () => ['93.184.216.34']);
    expect(refusal('https://as.example.com/.well-known/oauth-authorization-server', r)).toBeUndefined();
    expect(refusal('https://8.8.8.8/token', r)).toBeUndefined();
    for (const [target, why] of [
      ['http://127.0.0.1:8080/internal', /not https/],
      ['http://localhost/x', /not https/],
      ['https://127.0.0.1/x', /127\.0\.0\.1 is a loopback address/],
      ['https://[::1]/x', /\[::1\] is a loopback address/],
      ['https://[::ffff:127.0.0.1]/x', /is a loopback address/],
      ['https://10.0.0.1/register', /10\.0\.0\.1 is a private address/],
      ['https://172.16.5.4/', /private address/],
      ['https://192.168.0.1/', /private address/],
      ['https://[fd12::1]/', /private address/],
      ['https://169.254.169.254/latest/meta-data', /link-local address/],
      ['https://[fe80::1]/', /link-local address/],
      ['https://0.0.0.0/', /reserved address/],
      ['https://[::ffff:a00:1]/', /private address/],
      ['ftp://as.example.com/', /not https/],
      ['javascript:alert(1)', /not https/],
    ] as const) expect(refusal(target, r), target).toMatch(why);
  });

  it('a loopback upstream over http: loopback too, plain http only to loopback hosts, never private or link-local', async () => {
    const r = await reach('http://127.0.0.1:3000/mcp');
    expect(refusal('http://127.0.0.1:4000/.well-known/openid-configuration', r)).toBeUndefined();
    expect(refusal('http://localhost:4000/token', r)).toBeUndefined();
    expect(refusal('https://127.0.0.2/token', r)).toBeUndefined();
    expect(refusal('https://as.example.com/', r)).toBeUndefined();
    expect(refusal('http://as.example.com/', r)).toMatch(/plain http to a host that is not loopback/);
    expect(refusal('http://169.254.169.254/', r)).toMatch(/plain http to a host that is not loopback/);
    expect(refusal('https://169.254.169.254/', r)).toMatch(/link-local address/);
    expect(refusal('https://10.0.0.1/', r)).toMatch(/private address/);
  });

  it('a loopback upstream over https: loopback addresses over https, no plain http', async () => {
    const r = await reach('https://localhost:3443/mcp', async () => ['127.0.0.1']);
    expect(refusal('https://127.0.0.1:4443/token', r)).toBeUndefined();
    expect(refusal('http://127.0.0.1:4000/token', r)).toMatch(/not https/);
  });

  it('a private upstream: private addresses, not loopback nor link-local', async () => {
    const r = await reach('https://10.1.2.3/mcp');
    expect(refusal('https://10.9.9.9/token', r)).toBeUndefined();
    expect(refusal('https://127.0.0.1/token', r)).toMatch(/loopback address/);
    expect(refusal('https://169.254.169.254/', r)).toMatch(/link-local address/);
  });

  it('the upstream\'s own origin is always allowed, whatever its address', async () => {
    const r = await reach('http://0.0.0.0:3000/mcp');
    expect(refusal('http://0.0.0.0:3000/.well-known/oauth-protected-resource/mcp', r)).toBeUndefined();
    expect(refusal('http://0.0.0.0:3001/x', r)).toMatch(/not https/);
  });
});

describe('the address guard', () => {
  it('names the class of an address, IPv4-mapped forms included', () => {
    const guard = new AddressGuard(false);
    expect(['127.0.0.1', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1'].map((a) => guard.classOf(a))).toEqual(Array(4).fill('loopback'));
    expect(['10.0.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1', 'fd00::1'].map((a) => guard.classOf(a))).toEqual(Array(5).fill('private'));
    expect(['169.254.169.254', 'fe80::1'].map((a) => guard.classOf(a))).toEqual(Array(2).fill('link-local'));
    expect(['0.0.0.0', '224.0.0.1', '::', '2001:db8::1'].map((a) => guard.classOf(a))).toEqual(Array(4).fill('reserved'));
    expect(['93.184.216.34', '2606:4700::1111', '::ffff:8.8.8.8'].map((a) => guard.classOf(a))).toEqual(Array(3).fill('public'));
    expect(guard.classOf('example.com')).toBeUndefined();
  });

  it('allows public addresses, and the classes it is told to besides', () => {
    const loopback = new AddressGuard(false, ['loopback']);
    expect(loopback.allows('127.0.0.1')).toBe(true);
    expect(loopback.allows('::1')).toBe(true);
    expect(loopback.allows('8.8.8.8')).toBe(true);
    expect(loopback.allows('10.0.0.1')).toBe(false);
    expect(loopback.allows('169.254.169.254')).toBe(false);
    expect(new AddressGuard(false).allows('127.0.0.1')).toBe(false);
    expect(new AddressGuard(true).allows('10.0.0.1')).toBe(true);
  });
});
