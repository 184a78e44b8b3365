// Client ID Metadata Documents fetched from a real https server on loopback: what is accepted,
// cached per its caching headers in a bounded LRU, a failed URL not fetched again for a minute,
// and every refusal of the SSRF guard and of the document's contents.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressGuard } from '../../src/util/address-guard.js';
import { ClientDocuments, FAILURE_TTL_MS, freshnessOf } from '../../src/frontdoor/cimd.js';
import { startDocumentServer } from '../helpers/front-door.js';
import { selfSigned, type Certificate } from '../helpers/tls.js';

let dir: string;
let cert: Certificate;
let server: Awaited<ReturnType<typeof startDocumentServer>>;
const documents = new Map<string, { body: string; headers?: Record<string, string>; status?: number }>();

function doc(path: string, fields: Record<string, unknown> = {}, headers: Record<string, string> = {}): string {
  const url = `${server.origin}${path}`;
  documents.set(path, { body: JSON.stringify({ client_id: url, client_name: 'Host', redirect_uris: ['http://127.0.0.1/cb'], ...fields }), headers });
  return url;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-cimd-'));
  cert = await selfSigned(dir, 'docs');
  server = await startDocumentServer(cert, documents);
});

afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

function documentsFor(options: { allowPrivateAddresses?: boolean; maxEntries?: number } = {}): ClientDocuments {
  return new ClientDocuments({ allow: ['localhost'], allowPrivateAddresses: options.allowPrivateAddresses ?? true, ca: cert.certPem, ...(options.maxEntries ? { maxEntries: options.maxEntries } : {}) });
}

describe('Client ID Metadata Documents', () => {
  it('are fetched, and kept for their max-age', async () => {
    const cimd = documentsFor();
    try {
      const url = doc('/cached.json', {}, { 'cache-control': 'max-age=300' });
      expect(await cimd.resolve(url)).toEqual({ clientId: url, kind: 'cimd', name: 'Host', redirectUris: ['http://127.0.0.1/cb'] });
      await cimd.resolve(url);
      expect(server.fetched.filter((path) => path === '/cached.json')).toHaveLength(1);
      const fresh = doc('/no-store.json', {}, { 'cache-control': 'no-store' });
      await cimd.resolve(fresh);
      await cimd.resolve(fresh);
      expect(server.fetched.filter((path) => path === '/no-store.json')).toHaveLength(2);
    } finally {
      await cimd.close();
    }
  });

  it('are held in a bounded cache', async () => {
    const cimd = documentsFor({ maxEntries: 2 });
    try {
      for (const name of ['a', 'b', 'c', 'd']) await cimd.resolve(doc(`/bounded-${name}.json`, {}, { 'cache-control': 'max-age=300' }));
      expect(cimd.size).toBe(2);
    } finally {
      await cimd.close();
    }
  });

  it('that failed are not fetched again for FAILURE_TTL_MS; a burst for one URL makes one fetch', async () => {
    let now = 1_000_000;
    const cimd = new ClientDocuments({ allow: ['localhost'], allowPrivateAddresses: true, ca: cert.certPem, now: () => now });
    const fetches = (path: string): number => server.fetched.filter((fetched) => fetched === path).length;
    try {
      const missing = `${server.origin}/failing.json`;
      await expect(cimd.resolve(missing)).rejects.toThrow(/answered 404/);
      await expect(cimd.resolve(missing)).rejects.toThrow(/answered 404/);
      expect(fetches('/failing.json')).toBe(1);
      const unnamed = doc('/unnamed.json', { client_name: undefined });
      await expect(cimd.resolve(unnamed)).rejects.toThrow(/client_name/);
      await expect(cimd.resolve(unnamed)).rejects.toThrow(/client_name/);
      expect(fetches('/unnamed.json')).toBe(1);
      // Mended, it is still refused until the failure is forgotten; then fetched and kept as usual.
      doc('/failing.json', {}, { 'cache-control': 'max-age=300' });
      now += FAILURE_TTL_MS - 1;
      await expect(cimd.resolve(missing)).rejects.toThrow(/answered 404/);
      expect(fetches('/failing.json')).toBe(1);
      now += 2;
      expect((await cimd.resolve(missing)).name).toBe('Host');
      await cimd.resolve(missing);
      expect(fetches('/failing.json')).toBe(2);
      const burst = `${server.origin}/burst.json`;
      const answers = await Promise.allSettled(Array.from({ length: 5 }, () => cimd.resolve(burst)));
      expect(answers.every((answer) => answer.status === 'rejected')).toBe(true);
      expect(fetches('/burst.json')).toBe(1);
    } finally {
      await cimd.close();
    }
  });

  it('are refused when their contents are wrong', async () => {
    const cimd = documentsFor();
    try {
      await expect(cimd.resolve(doc('/other-id.json', { client_id: 'https://localhost/elsewhere.json' }))).rejects.toThrow(/another client_id/);
      await expect(cimd.resolve(doc('/no-name.json', { client_name: undefined }))).rejects.toThrow(/client_name/);
      await expect(cimd.resolve(doc('/no-redirects.json', { redirect_uris: [] }))).rejects.toThrow(/redirect_uris/);
      await expect(cimd.resolve(doc('/script.json', { redirect_uris: ['javascript:alert(1)'] }))).rejects.toThrow(/redirect URI/);
      await expect(cimd.resolve(doc('/secret.json', { token_endpoint_auth_method: 'client_secret_basic' }))).rejects.toThrow(/public clients/);
      documents.set('/big.json', { body: JSON.stringify({ padding: 'x'.repeat(6 * 1024) }) });
      await expect(cimd.resolve(`${server.origin}/big.json`)).rejects.toThrow(/larger than 5120 bytes/);
      documents.set('/text.json', { body: 'not json' });
      await expect(cimd.resolve(`${server.origin}/text.json`)).rejects.toThrow(/not JSON/);
      documents.set('/moved.json', { body: '', status: 302, headers: { location: doc('/target.json') } });
      await expect(cimd.resolve(`${server.origin}/moved.json`)).rejects.toThrow(/redirects are not followed/);
      await expect(cimd.resolve(`${server.origin}/missing.json`)).rejects.toThrow(/answered 404/);
    } finally {
      await cimd.close();
    }
  });

  it('are never fetched from loopback or private addresses unless allowed, nor from hosts outside cimd.allow', async () => {
    const cimd = documentsFor({ allowPrivateAddresses: false });
    try {
      const before = server.fetched.length;
      await expect(cimd.resolve(doc('/private.json'))).rejects.toThrow(/non-public address/);
      await expect(cimd.resolve(`https://127.0.0.1:${new URL(server.origin).port}/private.json`)).rejects.toThrow(/not allowed/);
      await expect(cimd.resolve('https://elsewhere.example/client.json')).rejects.toThrow(/not allowed/);
      expect(server.fetched.length).toBe(before);
    } finally {
      await cimd.close();
    }
    const literal = new ClientDocuments({ allow: ['*'], allowPrivateAddresses: false });
    try {
      await expect(literal.resolve('https://10.0.0.1/client.json')).rejects.toThrow(/non-public address/);
      await expect(literal.resolve('https://[::1]/client.json')).rejects.toThrow(/non-public address/);
    } finally {
      await literal.close();
    }
  });
});

describe('the address guard', () => {
  it('refuses loopback, private, link-local, unique-local and mapped addresses; allows public ones', () => {
    const guard = new AddressGuard(false);
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::']) {
      expect(guard.allows(address), address).toBe(false);
    }
    // IPv6 forms that carry an IPv4 address (IPv4-compatible, IPv4-translated, 6to4, Teredo), and documentation ranges.
    for (const address of ['::127.0.0.1', '::7f00:1', '::ffff:0:7f00:1', '2002:7f00:1::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '198.51.100.7', '203.0.113.9', '2001:db8::1']) {
      expect(guard.allows(address), address).toBe(false);
    }
    for (const address of ['93.184.216.34', '2606:4700::1111', '::ffff:8.8.8.8', '2001:4860:4860::8888']) expect(guard.allows(address), address).toBe(true);
    expect(new AddressGuard(true).allows('127.0.0.1')).toBe(true);
  });
});

describe('caching headers (RFC 9111)', () => {
  it('reads max-age less Age; no-store and no-cache keep nothing; none at all, a few minutes', () => {
    expect(freshnessOf('max-age=120', '20')).toBe(100_000);
    expect(freshnessOf('public, max-age=60', undefined)).toBe(60_000);
    expect(freshnessOf('no-store', undefined)).toBe(0);
    expect(freshnessOf('no-cache, max-age=60', undefined)).toBe(0);
    expect(freshnessOf(undefined, undefined)).toBe(300_000);
    expect(freshnessOf('max-age=99999999', undefined)).toBe(24 * 3_600_000);
  });
});
