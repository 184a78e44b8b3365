// Protocol revisions of the sessions era and the rules that depend on them
// (spec: basic/lifecycle.mdx "Version Negotiation", basic/transports.mdx "Protocol Version Header").

/** Newest first. */
export const SESSION_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;
export type SessionVersion = (typeof SESSION_VERSIONS)[number];

export const LATEST_VERSION: SessionVersion = '2025-11-25';

/** Assumed when a request carries no MCP-Protocol-Version header (transports.mdx). */
export const DEFAULT_HEADER_VERSION: SessionVersion = '2025-03-26';

export function isSupportedVersion(value: unknown): value is SessionVersion {
  return typeof value === 'string' && (SESSION_VERSIONS as readonly string[]).includes(value);
}

/** The client's version when supported, else the newest one the gateway speaks. */
export function negotiateVersion(requested: unknown): SessionVersion {
  return isSupportedVersion(requested) ? requested : LATEST_VERSION;
}

/** JSON-RPC batches were allowed in 2025-03-26 and removed in 2025-06-18. */
export function allowsBatches(version: string): boolean {
  return version <= '2025-03-26';
}
