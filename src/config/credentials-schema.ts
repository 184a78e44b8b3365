// Config of per-user upstream credentials (issue "Per-user upstream credentials"): where they are
// stored and sealed, how each user signs in to an upstream (userAuth), and the connect page's
// OpenID Connect login at the company IdP (auth.oauth.login). Keys are a public contract.
import { z } from 'zod';

const secretKey = z.string().min(32, 'a credentials key needs at least 32 characters');

export const credentials = z.strictObject({
  store: z
    .union([
      z.literal('memory'),
      z.strictObject({
        file: z.strictObject({ path: z.string().min(1).describe("The file, relative to the config file's directory (written with mode 0600).") }).describe('A file on this machine (laptops: survives restarts).'),
      }),
      z.strictObject({
        redis: z
          .strictObject({
            url: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').describe('The Redis server, as a redis:// or rediss:// URL.'),
            prefix: z.string().default('switchyard:cred:').describe("Prefix of the credential keys in Redis."),
          })
          .describe('Redis, shared by every replica (a sign-in or refresh on one is seen by all).'),
      }),
    ])
    .default('memory')
    .describe('Where per-user upstream credentials live: `memory` (lost on restart), `{ file: { path } }`, or `{ redis: { url, prefix } }`.'),
  key: z
    .union([secretKey, z.array(secretKey).min(1)])
    .transform((value) => (typeof value === 'string' ? [value] : value))
    .describe('Every stored secret is sealed with it (AES-256-GCM); at least 32 characters. A list [new, old] rotates: the first seals, all open. A key that opens nothing stored fails the start.'),
  /** How long a connect URL may be used (it is single-use). */
  connectTtl: z
    .number()
    .int()
    .min(10_000)
    .max(3_600_000)
    .default(600_000)
    .describe('How long a connect URL stays valid, in ms (each is single-use and bound to one principal and one upstream).'),
});

export const userAuth = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('oauth').describe('Authorization code + PKCE (S256) at the upstream\'s own authorization server, for each principal.'),
    scopes: z.array(z.string().min(1)).optional().describe("Scopes to ask for; default: what the upstream's 401 or its metadata asks for."),
    clientId: z.string().min(1).optional().describe('A client pre-registered at the upstream\'s authorization server; without it: a Client ID Metadata Document Switchyard serves (https publicUrl, when the server supports it), else Dynamic Client Registration.'),
    clientSecret: z.string().min(1).optional().describe('Its secret (a confidential client); omitted: a public client.'),
  }),
  z.strictObject({
    type: z.literal('secret').describe('Each user pastes their own secret (an API key) once, on a Switchyard page.'),
    header: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an HTTP header name').default('Authorization').describe('The header it is sent in.'),
    format: z.string().includes('{secret}', { message: 'must contain {secret}' }).default('Bearer {secret}').describe('The header value, with `{secret}` where the secret goes.'),
  }),
]);

export const login = z.strictObject({
  clientId: z.string().min(1).optional().describe("Switchyard's own client at the issuer (code + PKCE); omitted: a Client ID Metadata Document or Dynamic Client Registration when the issuer offers one, else the start fails naming this key."),
  clientSecret: z.string().min(1).optional().describe('Its secret, when the client is confidential.'),
  scopes: z.array(z.string().min(1)).default(['openid']).describe('Scopes of the login (openid is always asked for).'),
});

export type CredentialsConfig = z.output<typeof credentials>;
export type UserAuthConfig = z.output<typeof userAuth>;
export type LoginConfig = z.output<typeof login>;
