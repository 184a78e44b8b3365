// Dynamic Client Registration's limit per address (RFC 7591 §3 lets a server limit open
// registration): counted in the bucket store it is given, so replicas sharing one count
// together; an IPv6 address counts by its /64.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import type { ClientDocuments } from '../../src/frontdoor/cimd.js';
import { ClientRegistry, RegistrationLimited, registrationSource } from '../../src/frontdoor/clients.js';
import { MemoryBucketStore } from '../../src/ratelimit/memory-store.js';

const KEY = 'clients-unit-test-credentials-key-of-forty-chars';
const REGISTRATION = { client_name: 'Host', redirect_uris: ['http://127.0.0.1/cb'] };

let now = 1_000_000;
let store: CredentialStore;
let limits: MemoryBucketStore;

function registry(registrationsPerMinute?: number): ClientRegistry {
  return new ClientRegistry({ store, documents: {} as ClientDocuments, redirects: ['http://127.0.0.1'], limits, ...(registrationsPerMinute ? { registrationsPerMinute } : {}), now: () => now });
}

/** How each of `count` registrations from `address` ended, taking turns between `registries`. */
async function outcomes(registries: ClientRegistry[], address: string, count: number): Promise<Array<'registered' | number>> {
  const ended: Array<'registered' | number> = [];
  for (let i = 0; i < count; i++) {
    try {
      await registries[i % registries.length]!.register(REGISTRATION, address);
      ended.push('registered');
    } catch (err) {
      if (!(err instanceof RegistrationLimited)) throw err;
      ended.push(err.retryAfterMs);
    }
  }
  return ended;
}

beforeEach(async () => {
  now = 1_000_000;
  store = await openCredentialStore('memory', [KEY], undefined, { now: () => now });
  limits = new MemoryBucketStore(1_000, () => now);
});

afterEach(async () => {
  await limits.close();
  await store.close();
});

describe('registrations per address', () => {
  it('are counted once for replicas that share the store', async () => {
    const ended = await outcomes([registry(), registry()], '203.0.113.7', 12);
    expect(ended.filter((outcome) => outcome === 'registered')).toHaveLength(10);
    expect(ended.slice(10)).toEqual([6_000, 6_000]);
    expect(await store.count('frontdoor:client:')).toBe(10);
  });

  it('come back as the minute passes, and other addresses are counted apart', async () => {
    const clients = registry(2);
    expect(await outcomes([clients], '203.0.113.7', 3)).toEqual(['registered', 'registered', 30_000]);
    expect(await outcomes([clients], '198.51.100.1', 1)).toEqual(['registered']);
    now += 30_000;
    expect(await outcomes([clients], '203.0.113.7', 2)).toEqual(['registered', 30_000]);
  });

  it('count every address of an IPv6 /64 together', async () => {
    const clients = registry(2);
    expect(await outcomes([clients], '2001:db8:1:2::1', 1)).toEqual(['registered']);
    expect(await outcomes([clients], '2001:db8:1:2:ffff::9', 1)).toEqual(['registered']);
    expect(await outcomes([clients], '2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd', 1)).toEqual([30_000]);
    expect(await outcomes([clients], '2001:db8:1:3::1', 1)).toEqual(['registered']);
  });
});

describe('the source a registration is counted against', () => {
  it('is the IPv4 address, mapped or not', () => {
    expect(registrationSource('203.0.113.7')).toBe('203.0.113.7');
    expect(registrationSource('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(registrationSource('::FFFF:203.0.113.7')).toBe('203.0.113.7');
  });

  it("is an IPv6 address's /64, however it is written", () => {
    for (const address of ['2001:db8:0:1::5', '2001:0DB8:0000:0001:0000:0000:0000:0005', '2001:db8::1:0:0:0:7', '2001:db8:0:1:a:b:1.2.3.4', '2001:db8:0:1::9%eth0']) {
      expect(registrationSource(address), address).toBe('2001:db8:0:1::/64');
    }
    expect(registrationSource('::1')).toBe('0:0:0:0::/64');
    expect(registrationSource('2001:db8::')).toBe('2001:db8:0:0::/64');
    expect(registrationSource('a::b:c:d:e:1.2.3.4')).toBe('a:0:b:c::/64');
  });

  it('is the text itself when it is no address', () => {
    expect(registrationSource('unknown')).toBe('unknown');
  });
});
