// auth.oauth.frontDoor in the config: its defaults, and what `switchyard check` (the schema's
// cross-key rules) refuses: a front door without publicUrl, credentials or a login client.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';

const KEY = 'config-unit-test-credentials-key-of-forty-chars';

function parse(overrides: { listen?: object; credentials?: object | undefined; login?: object | undefined; frontDoor?: object }) {
  return configSchema.safeParse({
    listen: overrides.listen ?? { publicUrl: 'https://mcp.example.com/mcp' },
    auth: { oauth: { issuer: 'https://login.example.com/', jwksUri: 'https://login.example.com/keys', ...('login' in overrides ? (overrides.login ? { login: overrides.login } : {}) : { login: { clientId: 'switchyard' } }), frontDoor: overrides.frontDoor ?? {} } },
    ...('credentials' in overrides ? (overrides.credentials ? { credentials: overrides.credentials } : {}) : { credentials: { key: KEY } }),
    upstreams: {},
  });
}

describe('auth.oauth.frontDoor', () => {
  it('takes the issue\'s keys with their defaults', () => {
    // As the issue's configuration block writes them (a duration in days included).
    const parsed = parse({ frontDoor: { tokenTtl: '1h', refreshTtl: '30d', claims: ['groups', 'email'], cimd: { allow: ['claude.ai', '*.anthropic.com'] }, dcr: true, redirects: ['https://*', 'cursor://*'] } });
    expect(parsed.success).toBe(true);
    expect(parsed.data!.auth!.oauth!.frontDoor).toEqual({ tokenTtl: 3_600_000, refreshTtl: 2_592_000_000, grantMaxAge: 2_592_000_000, claims: ['groups', 'email'], cimd: { allow: ['claude.ai', '*.anthropic.com'], allowPrivateAddresses: false }, dcr: true, registrationsPerMinute: 10, redirects: ['https://*', 'cursor://*'] });
    expect(parse({}).data!.auth!.oauth!.frontDoor).toMatchObject({ tokenTtl: 3_600_000, dcr: true, registrationsPerMinute: 10, cimd: { allow: [], allowPrivateAddresses: false } });
    expect(parse({ frontDoor: { grantMaxAge: '168h' } }).data!.auth!.oauth!.frontDoor!.grantMaxAge).toBe(7 * 24 * 3_600_000);
  });

  it('needs listen.publicUrl, credentials and auth.oauth.login', () => {
    const messages = (result: ReturnType<typeof parse>) => (result.error?.issues ?? []).map((issue) => issue.message).join('\n');
    expect(messages(parse({ listen: {}, frontDoor: {} }))).toContain('frontDoor needs listen.publicUrl');
    expect(messages(parse({ credentials: undefined }))).toContain('frontDoor needs a `credentials` block');
    expect(messages(parse({ login: undefined }))).toContain('frontDoor needs auth.oauth.login');
  });

  it('refuses unknown keys and bad values, and reserves /oauth for itself', () => {
    expect(parse({ frontDoor: { tokenTtls: '1h' } }).success).toBe(false);
    expect(parse({ frontDoor: { cimd: { allow: ['https://claude.ai'] } } }).success).toBe(false);
    expect(parse({ frontDoor: { tokenTtl: '2d' } }).success).toBe(false);
    const endpoint = configSchema.safeParse({ listen: { publicUrl: 'https://mcp.example.com/mcp' }, auth: { apiKeys: [{ id: 'a', hash: `sha256:${'0'.repeat(64)}` }] }, endpoints: [{ path: '/oauth/token' }], upstreams: {} });
    expect(endpoint.error?.issues.map((issue) => issue.message)).toContain('/oauth/token is reserved');
  });
});
