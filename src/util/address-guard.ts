// The SSRF guard of outbound fetches to URLs someone else chose (a Client ID Metadata Document, an
// upstream's OAuth metadata and endpoints): which addresses may be connected to, checked on the
// address the connection actually uses (a DNS lookup wrapped at connect time, so a name that
// resolves differently between check and use gains nothing). IP literals never reach a lookup:
// check them with `allows` (or `literalRefusal`) before connecting.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Where an address is: the public internet, or one of the non-public classes a guard may be told
 * to allow as well. `reserved` is every other non-public range (this network, shared-use,
 * documentation, benchmarking, multicast, future use, the IPv6 forms that carry an IPv4 address).
 */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'reserved';

/** The ranges of each non-public class (RFC 6890 and its IPv6 peers); the first that holds an address names its class. */
const RANGES: ReadonlyArray<readonly [Exclude<AddressClass, 'public'>, 'ipv4' | 'ipv6', string, number]> = [
  ['loopback', 'ipv4', '127.0.0.0', 8],
  ['loopback', 'ipv6', '::1', 128],
  ['private', 'ipv4', '10.0.0.0', 8],
  ['private', 'ipv4', '172.16.0.0', 12],
  ['private', 'ipv4', '192.168.0.0', 16],
  ['private', 'ipv4', '100.64.0.0', 10],
  ['private', 'ipv6', 'fc00::', 7],
  ['link-local', 'ipv4', '169.254.0.0', 16],
  ['link-local', 'ipv6', 'fe80::', 10],
  ['reserved', 'ipv4', '0.0.0.0', 8],
  ['reserved', 'ipv4', '192.0.0.0', 24],
  ['reserved', 'ipv4', '192.0.2.0', 24],
  ['reserved', 'ipv4', '192.88.99.0', 24],
  ['reserved', 'ipv4', '198.18.0.0', 15],
  ['reserved', 'ipv4', '198.51.100.0', 24],
  ['reserved', 'ipv4', '203.0.113.0', 24],
  ['reserved', 'ipv4', '224.0.0.0', 4],
  ['reserved', 'ipv4', '240.0.0.0', 4],
  // IPv4-compatible (deprecated; :: among them) and IPv4-translated addresses, 6to4 and Teredo
  // (2001::/32, in 2001::/23): forms that carry an IPv4 address a stack may reach.
  ['reserved', 'ipv6', '::', 96],
  ['reserved', 'ipv6', '::ffff:0:0:0', 96],
  ['reserved', 'ipv6', '2002::', 16],
  ['reserved', 'ipv6', '2001::', 23],
  ['reserved', 'ipv6', '100::', 64],
  ['reserved', 'ipv6', 'ff00::', 8],
  ['reserved', 'ipv6', '64:ff9b::', 96],
  ['reserved', 'ipv6', '2001:db8::', 32],
];

export class AddressRefused extends Error {
  override readonly name = 'AddressRefused';
  readonly code = 'ADDRESS_REFUSED';
}

/** The IP literal a URL names as its host (brackets taken off an IPv6 one), or undefined for a name. */
export function literalHost(url: URL): string | undefined {
  const bare = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(bare) === 0 ? undefined : bare;
}

export class AddressGuard {
  /** One list per non-public class, in RANGES order (an IPv4-mapped IPv6 address is checked against the IPv4 rules). */
  readonly #classes: Array<[Exclude<AddressClass, 'public'>, BlockList]> = [];
  readonly #allowPrivate: boolean;
  readonly #also: ReadonlySet<AddressClass>;

  /**
   * `allowPrivate`: every address (the operator said so). Else public addresses, and those of the
   * classes in `also` (the class of an operator-configured host whose own servers live beside it).
   */
  constructor(allowPrivate: boolean, also: Iterable<AddressClass> = []) {
    this.#allowPrivate = allowPrivate;
    this.#also = new Set(also);
    for (const [name, family, net, prefix] of RANGES) {
      let list = this.#classes.find(([n]) => n === name)?.[1];
      if (!list) this.#classes.push([name, (list = new BlockList())]);
      list.addSubnet(net, prefix, family);
    }
  }

  /** The class of an IP literal (brackets allowed); undefined for anything that is not one. */
  classOf(address: string): AddressClass | undefined {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const bare = mapped ?? address.replace(/^\[|\]$/g, '');
    const family = isIP(bare);
    if (family === 0) return undefined;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    return this.#classes.find(([, list]) => list.check(bare, type))?.[0] ?? 'public';
  }

  /** Whether a connection to `address` (an IP literal) is allowed. */
  allows(address: string): boolean {
    if (this.#allowPrivate) return true;
    const found = this.classOf(address);
    return found === 'public' || (found !== undefined && this.#also.has(found));
  }

  /** Why a URL whose host is a refused IP literal may not be fetched (checked before connecting); undefined for a name or an allowed one. */
  literalRefusal(url: URL): string | undefined {
    const literal = literalHost(url);
    if (literal === undefined || this.allows(literal)) return undefined;
    return `${url.hostname} is a ${this.classOf(literal)} address`;
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
