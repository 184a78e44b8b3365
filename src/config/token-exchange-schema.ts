// Config of token exchange (issue "The user's identity carried to internal upstreams"): an HTTP
// upstream reached with a token the company IdP issues for it on behalf of the calling user
// (RFC 8693, or Entra ID's on-behalf-of flow). Keys are a public contract.
import { z } from 'zod';

/**
 * RFC 8693 §3 token type identifiers the subject may be named by. The subject is always the
 * user's IdP access token: `access_token` names it in every case, `jwt` only where it is sure to
 * be a JWT (see tokenExchangeNeeds). `id_token` is refused with a message saying why.
 */
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
const TOKEN_TYPES = [ACCESS_TOKEN_TYPE, JWT_TYPE] as const;

export const tokenExchange = z
  .strictObject({
    audience: z.string().min(1).optional().describe('What the token is for (RFC 8693 `audience`; for `entra-obo`, the scope asked is `<audience>/.default`). At least one of `audience` and `resource`.'),
    resource: z.url().optional().describe('The upstream as an RFC 8707 resource indicator (RFC 8693 `resource`). At least one of `audience` and `resource`.'),
    scopes: z.array(z.string().min(1)).default([]).describe('Scopes to ask for (rfc8693); ignored by `entra-obo`, which asks for `<audience>/.default`.'),
    tokenUrl: z.url({ protocol: /^https?$/ }).optional().describe("The IdP's token endpoint; default: the `token_endpoint` of `auth.oauth.issuer`'s metadata."),
    client: z
      .union([
        z.literal('login'),
        z.strictObject({
          clientId: z.string().min(1).describe('The client that authenticates the exchange at the IdP.'),
          clientSecret: z.string().min(1).describe('Its secret (client_secret_basic; `entra-obo` sends it in the form, as Entra does).'),
        }),
      ])
      .default('login')
      .describe("Whose client authenticates the exchange: `login` (auth.oauth.login's clientId and clientSecret, the default) or `{ clientId, clientSecret }`."),
    variant: z.enum(['rfc8693', 'entra-obo']).default('rfc8693').describe('`rfc8693` (grant token-exchange) or `entra-obo` (grant jwt-bearer, requested_token_use=on_behalf_of, scope `<audience>/.default`).'),
    subjectTokenType: z
      // RFC 8693 §2.1: subject_token_type names the type of the token in subject_token.
      .enum(TOKEN_TYPES, {
        error: (issue) => (issue.input === ID_TOKEN_TYPE ? `the subject is the user's IdP access token, not an ID token: use ${ACCESS_TOKEN_TYPE} (or ${JWT_TYPE} when the IdP's access tokens are JWTs)` : undefined),
      })
      .default(ACCESS_TOKEN_TYPE)
      .describe("The RFC 8693 `subject_token_type` sent with the subject, which is always the user's IdP access token: `urn:ietf:params:oauth:token-type:access_token` (the default, right in every case), or `urn:ietf:params:oauth:token-type:jwt` for an IdP that wants it (refused beside `auth.oauth.frontDoor`, whose IdP access tokens may be opaque). Never `…:id_token`: no ID token is ever sent."),
  })
  .superRefine((value, ctx) => {
    if (value.audience === undefined && value.resource === undefined) ctx.addIssue({ code: 'custom', path: ['audience'], message: 'tokenExchange needs an audience, a resource, or both' });
    if (value.variant === 'entra-obo' && value.audience === undefined) ctx.addIssue({ code: 'custom', path: ['audience'], message: 'entra-obo asks for the scope <audience>/.default: it needs an audience' });
  });

export type TokenExchangeConfig = z.output<typeof tokenExchange>;

interface NeedsView {
  auth?: { oauth?: { login?: { clientId?: string | undefined; clientSecret?: string | undefined } | undefined; frontDoor?: unknown } | undefined } | undefined;
  upstreams: Readonly<
    Record<string, { http?: { tokenExchange?: TokenExchangeConfig | undefined; headers?: Readonly<Record<string, string>> | undefined; oauth?: unknown; userAuth?: unknown; transport: string } | undefined }>
  >;
}

/**
 * What token exchange needs of the rest of the config: the IdP (auth.oauth), a confidential client
 * there, the exchanged token as the upstream's only credential (no static Authorization, no oauth,
 * no userAuth), its transport, and a subject token type true of every subject it may send.
 */
export function tokenExchangeNeeds(config: NeedsView): Array<{ path: (string | number)[]; message: string }> {
  const issues: Array<{ path: (string | number)[]; message: string }> = [];
  for (const [name, entry] of Object.entries(config.upstreams)) {
    const exchange = entry.http?.tokenExchange;
    if (!exchange) continue;
    const path = ['upstreams', name, 'http', 'tokenExchange'];
    const http = entry.http!;
    if (http.transport === 'sse') issues.push({ path, message: 'tokenExchange needs the streamable-http transport' });
    if (http.oauth || http.userAuth) issues.push({ path, message: `tokenExchange and ${http.oauth ? "oauth (the gateway's own credential)" : 'userAuth'} exclude each other` });
    // Header names in any letter case: a static one would reach the upstream beside the exchanged
    // token, or in its place when the exchange fails.
    for (const header of Object.keys(http.headers ?? {})) {
      if (header.toLowerCase() === 'authorization') issues.push({ path: ['upstreams', name, 'http', 'headers', header], message: `tokenExchange and a static ${header} header (the gateway's own credential) exclude each other: the upstream gets the exchanged token only` });
    }
    if (!config.auth?.oauth) {
      issues.push({ path, message: "tokenExchange needs auth.oauth: the subject is the user's token from that IdP" });
      continue;
    }
    // Tokens clients send are verified as JWTs; the front door's come from an IdP refresh,
    // unverified, and an IdP may issue opaque ones.
    if (exchange.subjectTokenType === JWT_TYPE && config.auth.oauth.frontDoor) {
      issues.push({ path: [...path, 'subjectTokenType'], message: `subjectTokenType jwt with auth.oauth.frontDoor: the front door's subjects are IdP access tokens that may be opaque, not JWTs; use ${ACCESS_TOKEN_TYPE}` });
    }
    const login = config.auth.oauth.login;
    if (exchange.client === 'login' && (!login?.clientId || !login.clientSecret)) {
      issues.push({ path: [...path, 'client'], message: 'client: login needs auth.oauth.login.clientId and clientSecret (a confidential client authenticates the exchange); or give { clientId, clientSecret }' });
    }
  }
  return issues;
}
