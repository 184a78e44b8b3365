// upstreams.<name>.http.tokenExchange in the config: the issue's keys with their defaults, and
// what `switchyard check` (the schema's cross-key rules) refuses.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';

const OAUTH = { issuer: 'https://login.example.com/', jwksUri: 'https://login.example.com/keys', resource: 'https://mcp.example.com/mcp' };

/** `oauth` null: no auth at all. */
function parse(http: Record<string, unknown>, oauth: Record<string, unknown> | null = { ...OAUTH, login: { clientId: 'switchyard', clientSecret: 'secret' } }) {
  return configSchema.safeParse({
    ...(oauth ? { auth: { oauth } } : {}),
    upstreams: { wiki: { http: { url: 'https://wiki.internal/mcp', ...http } } },
  });
}

const messages = (result: ReturnType<typeof parse>): string => (result.error?.issues ?? []).map((issue) => issue.message).join('\n');

describe('upstreams.<name>.http.tokenExchange', () => {
  it("takes the issue's keys, and defaults client, variant and subjectTokenType", () => {
    const full = parse({
      tokenExchange: {
        audience: 'api://wiki',
        resource: 'https://wiki.internal/mcp',
        scopes: ['wiki.read'],
        tokenUrl: 'https://login.example.com/token',
        client: 'login',
        variant: 'rfc8693',
        subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token',
      },
    });
    expect(full.success).toBe(true);
    const minimal = parse({ tokenExchange: { audience: 'api://wiki' } });
    expect(minimal.data!.upstreams.wiki!.http!.tokenExchange).toEqual({ audience: 'api://wiki', scopes: [], client: 'login', variant: 'rfc8693', subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token' });
    const obo = parse({ tokenExchange: { audience: 'api://wiki', variant: 'entra-obo', client: { clientId: 'obo', clientSecret: 's' } } }, OAUTH);
    expect(obo.success).toBe(true);
  });

  it('needs an audience or a resource (entra-obo an audience), auth.oauth, and a confidential client', () => {
    expect(messages(parse({ tokenExchange: {} }))).toContain('tokenExchange needs an audience, a resource, or both');
    expect(messages(parse({ tokenExchange: { resource: 'https://wiki.internal/mcp', variant: 'entra-obo' } }))).toContain('entra-obo asks for the scope <audience>/.default: it needs an audience');
    expect(messages(parse({ tokenExchange: { audience: 'api://wiki' } }, null))).toContain('tokenExchange needs auth.oauth');
    expect(messages(parse({ tokenExchange: { audience: 'api://wiki' } }, { ...OAUTH, login: { clientId: 'switchyard' } }))).toContain('client: login needs auth.oauth.login.clientId and clientSecret');
  });

  it('excludes userAuth, the gateway\'s own oauth and the legacy SSE transport; refuses unknown keys and values', () => {
    const oauth = { tokenUrl: 'https://login.example.com/token', clientId: 'gw', clientSecret: 's' };
    expect(messages(parse({ tokenExchange: { audience: 'api://wiki' }, oauth }))).toContain("tokenExchange and oauth (the gateway's own credential) exclude each other");
    expect(messages(parse({ tokenExchange: { audience: 'api://wiki' }, userAuth: { type: 'secret' } }))).toContain('tokenExchange and userAuth exclude each other');
    expect(messages(parse({ tokenExchange: { audience: 'api://wiki' }, transport: 'sse' }))).toContain('tokenExchange needs the streamable-http transport');
    expect(parse({ tokenExchange: { audience: 'api://wiki', variant: 'obo' } }).success).toBe(false);
    expect(parse({ tokenExchange: { audience: 'api://wiki', subjectTokenType: 'urn:example' } }).success).toBe(false);
    expect(parse({ tokenExchange: { audience: 'api://wiki', audiences: ['x'] } }).success).toBe(false);
  });

  it("refuses a static Authorization header beside it, in any letter case: the gateway's own credential never reaches the upstream", () => {
    for (const name of ['Authorization', 'authorization', 'AUTHORIZATION']) {
      const result = parse({ tokenExchange: { audience: 'api://wiki' }, headers: { [name]: 'Bearer gateway-static' } });
      expect(result.success, name).toBe(false);
      expect(messages(result)).toContain(`tokenExchange and a static ${name} header (the gateway's own credential) exclude each other`);
      expect(result.error!.issues.find((issue) => issue.message.includes('static'))!.path).toEqual(['upstreams', 'wiki', 'http', 'headers', name]);
    }
    // Other static headers stay allowed.
    expect(parse({ tokenExchange: { audience: 'api://wiki' }, headers: { 'x-team': 'wiki' } }).success).toBe(true);
  });

  it("refuses subjectTokenType id_token: the subject is the user's access token, never an ID token", () => {
    const result = parse({ tokenExchange: { audience: 'api://wiki', subjectTokenType: 'urn:ietf:params:oauth:token-type:id_token' } });
    expect(result.success).toBe(false);
    expect(messages(result)).toContain("the subject is the user's IdP access token, not an ID token");
    expect(result.error!.issues[0]!.path).toEqual(['upstreams', 'wiki', 'http', 'tokenExchange', 'subjectTokenType']);
  });

  it('takes subjectTokenType jwt only where every subject is a verified JWT: not beside the front door, whose IdP access tokens may be opaque', () => {
    const jwt = { audience: 'api://wiki', subjectTokenType: 'urn:ietf:params:oauth:token-type:jwt' };
    expect(parse({ tokenExchange: jwt }).success).toBe(true);
    const frontDoor = { ...OAUTH, login: { clientId: 'switchyard', clientSecret: 'secret' }, frontDoor: {} };
    const withFrontDoor = configSchema.safeParse({
      listen: { publicUrl: 'https://mcp.example.com' },
      credentials: { key: 'k'.repeat(44) },
      auth: { oauth: frontDoor },
      upstreams: { wiki: { http: { url: 'https://wiki.internal/mcp', tokenExchange: jwt } } },
    });
    expect(messages(withFrontDoor)).toContain('subjectTokenType jwt');
    expect(messages(withFrontDoor)).toContain('may be opaque');
    // The access_token type is right for every subject, the front door's included.
    const accessToken = configSchema.safeParse({
      listen: { publicUrl: 'https://mcp.example.com' },
      credentials: { key: 'k'.repeat(44) },
      auth: { oauth: frontDoor },
      upstreams: { wiki: { http: { url: 'https://wiki.internal/mcp', tokenExchange: { audience: 'api://wiki' } } } },
    });
    expect(messages(accessToken)).toBe('');
  });
});
