// Config of the front door (issue 37): Switchyard as the OAuth authorization server hosts see,
// signing users in at the company IdP behind it (auth.oauth.frontDoor). Keys are a public contract.
import { z } from 'zod';
import { parseDuration } from '../util/duration.js';

/** The same duration rule as schema.ts (a number of ms, or "30s", "1h"); kept here to avoid an import cycle. */
const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({ code: 'custom', message: `expected a positive duration such as 30s, 5m, 1h or 30d, got ${JSON.stringify(value)}` });
    return z.NEVER;
  }
  return ms;
});

const DAY_MS = 24 * 60 * 60_000;

/** Redirect URIs a DCR client may register when `redirects` is not given. */
export const DEFAULT_REDIRECTS = ['https://*', 'http://127.0.0.1', 'http://[::1]', 'http://localhost', 'cursor://*', 'vscode://*'];

const cimd = z.strictObject({
  allow: z
    .array(z.string().regex(/^(\*|(\*\.)?[A-Za-z0-9.-]+)$/, 'must be a host name, "*.example.com" or "*"'))
    .default([])
    .describe('Host names whose Client ID Metadata Documents (https client ids) are accepted: exact names, "*.example.com" for its subdomains, or "*" for any. Empty: no CIMD client is accepted.'),
  allowPrivateAddresses: z
    .boolean()
    .default(false)
    .describe('Fetch documents from loopback, private, link-local and unique-local addresses too (tests and closed networks only).'),
});

export const frontDoor = z.strictObject({
  tokenTtl: duration
    .default(60 * 60_000)
    .refine((ms) => ms <= DAY_MS, 'at most 24h')
    .describe('Lifetime of the access tokens Switchyard issues (ES256 JWTs, `typ: at+jwt`).'),
  refreshTtl: duration
    .default(30 * DAY_MS)
    .describe('Lifetime of a refresh token; each use rotates it (and starts a new lifetime); reusing a rotated one revokes the whole grant.'),
  grantMaxAge: duration
    .default(30 * DAY_MS)
    .describe(
      "Longest a grant lasts from the user's sign-in at the IdP, however often its refresh token is used: then refresh is refused (invalid_grant) and the host signs the user in again. The only end of a grant whose IdP gave no refresh token to check the user with.",
    ),
  claims: z
    .array(z.string().regex(/^[A-Za-z0-9_:.-]{1,64}$/, 'must be a claim name'))
    .optional()
    .describe("IdP ID-token claims copied into Switchyard's access tokens (teams[].match reads them); default: every claim a teams[].match names."),
  cimd: cimd.prefault({}).describe('Clients whose `client_id` is an https URL (Client ID Metadata Documents).'),
  dcr: z.boolean().default(true).describe('Serve Dynamic Client Registration (RFC 7591) at /oauth/register, for public clients only.'),
  registrationsPerMinute: z
    .number()
    .int()
    .min(1)
    .default(10)
    .describe(
      "Registrations (DCR) allowed per client address (an IPv6 one: per /64) per minute: counted in Redis for every replica together when rateLimits.store is Redis, else per replica. The address is the connection's: behind a proxy or load balancer every client shares the proxy's, so raise this there.",
    ),
  authorizationsPerMinute: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "Sign-ins (requests to /oauth/authorize that send the browser to the IdP) allowed per client address (an IPv6 one: per /64) per minute, default 60: each keeps a pending flow for 10 minutes. Counted like registrationsPerMinute (Redis: every replica together); behind a proxy every client shares the proxy's address, so raise this there.",
    ),
  redirects: z
    .array(z.string().regex(/^[a-z][a-z0-9+.-]*:\/\/[^\s]*$/, 'must be a URI prefix such as https://*, http://127.0.0.1 or cursor://*'))
    .default(DEFAULT_REDIRECTS)
    .describe('Redirect URIs a DCR client may register: "scheme://*" allows any URI of that scheme, a loopback "http://127.0.0.1", "http://[::1]" or "http://localhost" any port and path of it (RFC 8252 §7.3), anything else is a prefix.'),
});

/** What the front door needs besides its own keys (the config's cross-key check; `switchyard check` reports it). */
export function frontDoorNeeds(config: { listen: { publicUrl?: string | undefined }; credentials?: unknown; auth?: { oauth?: { frontDoor?: unknown; login?: unknown } | undefined } | undefined }): string[] {
  if (!config.auth?.oauth?.frontDoor) return [];
  const needs: string[] = [];
  if (!config.listen.publicUrl) needs.push('frontDoor needs listen.publicUrl: its issuer and redirect URIs are made under it');
  if (!config.credentials) needs.push('frontDoor needs a `credentials` block (store and key): clients, codes, grants and signing keys live there');
  if (!config.auth.oauth.login) needs.push('frontDoor needs auth.oauth.login: Switchyard signs users in at the IdP with it');
  return needs;
}

export type FrontDoorConfig = z.output<typeof frontDoor>;
