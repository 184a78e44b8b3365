// The SSRF guard of the Client ID Metadata Document fetch: which addresses may be connected to,
// checked on the address the connection actually uses (a DNS lookup wrapped at connect time, so
// a name that resolves differently between check and use gains nothing).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/** Loopback, private, link-local, unique-local and other non-public ranges (RFC 6890 and its IPv6 peers). */
function nonPublic(): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.88.99.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['198.51.100.0', 24],
    ['203.0.113.0', 24],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ] as const) list.addSubnet(net, prefix, 'ipv4');
  for (const [net, prefix] of [
    // IPv4-compatible (deprecated; ::1 and :: among them) and IPv4-translated addresses, 6to4 and
    // Teredo (2001::/32, in 2001::/23): forms that carry an IPv4 address a stack may reach.
    ['::', 96],
    ['::ffff:0:0:0', 96],
    ['2002::', 16],
    ['2001::', 23],
    ['100::', 64],
    ['fc00::', 7],
    ['fe80::', 10],
    ['ff00::', 8],
    ['64:ff9b::', 96],
    ['2001:db8::', 32],
  ] as const) list.addSubnet(net, prefix, 'ipv6');
  return list;
}

export class AddressRefused extends Error {
  override readonly name = 'AddressRefused';
  readonly code = 'ADDRESS_REFUSED';
}

export class AddressGuard {
  readonly #blocked = nonPublic();
  readonly #allowPrivate: boolean;

  constructor(allowPrivate: boolean) {
    this.#allowPrivate = allowPrivate;
  }

  /** Whether a connection to `address` (an IP literal) is allowed. */
  allows(address: string): boolean {
    if (this.#allowPrivate) return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const bare = mapped ?? address.replace(/^\[|\]$/g, '');
    const family = isIP(bare);
    if (family === 0) return false;
    return !this.#blocked.check(bare, family === 4 ? 'ipv4' : 'ipv6');
  }

  /** A `lookup` for net.connect that fails when any resolved address is refused. */
  readonly lookup = (hostname: string, options: object, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const refused = addresses.find((entry) => !this.allows(entry.address));
      if (refused) return callback(new AddressRefused(`${hostname} resolves to ${refused.address}, a non-public address`), '');
      if ((options as { all?: boolean }).all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(new AddressRefused(`${hostname} does not resolve`), '');
      callback(null, first.address, first.family);
    });
  };
}
