// Proves the test IdP's Entra-like mode (the front door's company IdP): no registration endpoint
// and no CIMD flag in its metadata, any authorization or token request carrying `resource`
// refused with AADSTS9010010, and an account's groups in the ID token and access tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { startIdp, type TestIdp } from '../helpers/oidc.js';

let idp: TestIdp;

beforeAll(async () => {
  idp = await startIdp({
    entra: true,
    accounts: { alice: { groups: ['eng'] } },
    clients: [{ client_id: 'switchyard', client_secret: 'a-secret-of-the-login-client', redirect_uris: ['http://127.0.0.1/cb'], grant_types: ['authorization_code', 'refresh_token'] }],
    resources: { 'http://127.0.0.1/mcp': { scope: 'mcp' } },
  });
});

afterAll(async () => {
  await idp?.close();
});

describe('the test IdP like Entra', () => {
  it('offers neither registration nor Client ID Metadata Documents', async () => {
    const metadata = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(metadata.registration_endpoint).toBeUndefined();
    expect(metadata.client_id_metadata_document_supported).toBeUndefined();
  });

  it('refuses an authorization request and a token request that carry resource', async () => {
    const authorize = new URL(`${idp.issuer}/auth`);
    authorize.search = new URLSearchParams({ client_id: 'switchyard', response_type: 'code', redirect_uri: 'http://127.0.0.1/cb', scope: 'openid', resource: 'http://127.0.0.1/mcp', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' }).toString();
    const refused = await fetch(authorize, { redirect: 'manual' });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('AADSTS9010010');
    const token = await fetch(`${idp.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('switchyard:a-secret-of-the-login-client').toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'none', resource: 'http://127.0.0.1/mcp' }).toString(),
    });
    expect(token.status).toBe(400);
    expect(idp.refusedResources()).toBe(2);
  });

  it("puts an account's claims in its access tokens", async () => {
    const token = await idp.issueAccessToken({ sub: 'alice', clientId: 'switchyard', resource: 'http://127.0.0.1/mcp' });
    expect(decodeJwt(token)).toMatchObject({ sub: 'alice', groups: ['eng'] });
  });
});
