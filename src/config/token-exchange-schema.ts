// Config of token exchange (issue "The user's identity carried to internal upstreams"): an HTTP
// upstream reached with a token the company IdP issues for it on behalf of the calling user
// (RFC 8693, or Entra ID's on-behalf-of flow). Keys are a public contract.
import { z } from 'zod';

/** RFC 8693 §3 token type identifiers a subject token may be named by. */
const TOKEN_TYPES = ['urn:ietf:params:oauth:token-type:access_token', 'urn:ietf:params:oauth:token-type:id_token', 'urn:ietf:params:oauth:token-type:jwt'] as const;

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
    subjectTokenType: z.enum(TOKEN_TYPES).default('urn:ietf:params:oauth:token-type:access_token').describe('The RFC 8693 type of the subject token (the user\'s IdP access token).'),
  })
  .superRefine((value, ctx) => {
    if (value.audience === undefined && value.resource === undefined) ctx.addIssue({ code: 'custom', path: ['audience'], message: 'tokenExchange needs an audience, a resource, or both' });
    if (value.variant === 'entra-obo' && value.audience === undefined) ctx.addIssue({ code: 'custom', path: ['audience'], message: 'entra-obo asks for the scope <audience>/.default: it needs an audience' });
  });

export type TokenExchangeConfig = z.output<typeof tokenExchange>;

interface NeedsView {
  auth?: { oauth?: { login?: { clientId?: string | undefined; clientSecret?: string | undefined } | undefined } | undefined } | undefined;
  upstreams: Readonly<Record<string, { http?: { tokenExchange?: TokenExchangeConfig | undefined; oauth?: unknown; userAuth?: unknown; transport: string } | undefined }>>;
}

/** What token exchange needs of the rest of the config: the IdP (auth.oauth), a confidential client there, its own credential and transport. */
export function tokenExchangeNeeds(config: NeedsView): Array<{ path: (string | number)[]; message: string }> {
  const issues: Array<{ path: (string | number)[]; message: string }> = [];
  for (const [name, entry] of Object.entries(config.upstreams)) {
    const exchange = entry.http?.tokenExchange;
    if (!exchange) continue;
    const path = ['upstreams', name, 'http', 'tokenExchange'];
    const http = entry.http!;
    if (http.transport === 'sse') issues.push({ path, message: 'tokenExchange needs the streamable-http transport' });
    if (http.oauth || http.userAuth) issues.push({ path, message: `tokenExchange and ${http.oauth ? "oauth (the gateway's own credential)" : 'userAuth'} exclude each other` });
    if (!config.auth?.oauth) {
      issues.push({ path, message: "tokenExchange needs auth.oauth: the subject is the user's token from that IdP" });
      continue;
    }
    const login = config.auth.oauth.login;
    if (exchange.client === 'login' && (!login?.clientId || !login.clientSecret)) {
      issues.push({ path: [...path, 'client'], message: 'client: login needs auth.oauth.login.clientId and clientSecret (a confidential client authenticates the exchange); or give { clientId, clientSecret }' });
    }
  }
  return issues;
}
