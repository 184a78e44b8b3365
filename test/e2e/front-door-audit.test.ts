// The front door's audit records (switchyard.audit/1, file sink) with real parts: an Entra-like
// oidc-provider, Chromium signing alice in and approving a DCR client, then: the token issued,
// a reused code refused, a spent refresh token presented again (the grant revoked), and a tool
// call with the front door's token carrying the client id. No token or code lands in
// the file.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser } from '../helpers/browser.js';
import { ACCOUNTS, answerConsent, frontDoorConfig, loginClient, pkce, reachConsent, startCallbackListener, startFrontDoorGateway, tokenRequest, type FrontDoorParts } from '../helpers/front-door.js';
import { connectClient, textOf, upstream } from '../helpers/gateway.js';
import { startIdp } from '../helpers/oidc.js';
import { freePort } from '../helpers/redis.js';

type AuditRecord = Record<string, unknown> & { detail?: Record<string, unknown> };

interface Harness extends FrontDoorParts {
  dir: string;
}

let h: Harness | undefined;
let clientId = '';
/** Every secret the host was given (code, tokens): none may appear in the audit file. */
const secrets: string[] = [];
let records: AuditRecord[] = [];

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-frontdoor-audit-'));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const idp = await startIdp({ entra: true, clients: [loginClient(origin)], accounts: ACCOUNTS });
  const callback = await startCallbackListener();
  const auditPath = join(dir, 'audit.jsonl');
  const config = frontDoorConfig(idp.issuer, `${origin}/mcp`, {}, { upstreams: { everything: upstream.everything() }, audit: { sink: { file: { path: auditPath } } } });
  h = { idp, callback, origin, dir, gateway: await startFrontDoorGateway(config, port), browser: await startBrowser() };

  const registered = await fetch(`${origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Audited', redirect_uris: [callback.url], token_endpoint_auth_method: 'none' }) });
  expect(registered.status).toBe(201);
  clientId = ((await registered.json()) as { client_id: string }).client_id;

  // alice signs in and approves the client; the host redeems the code.
  const { verifier, challenge } = pkce();
  const authorize = new URL(`${origin}/oauth/authorize`);
  authorize.search = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: callback.url, code_challenge: challenge, code_challenge_method: 'S256', state: 'st' }).toString();
  const { page } = await reachConsent(h.browser, authorize.href, 'alice');
  let code: string;
  try {
    const answered = callback.next();
    await answerConsent(page, 'approve');
    code = (await answered).searchParams.get('code')!;
  } finally {
    await page.context().close();
  }
  const redeem = { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: callback.url };
  const issued = await tokenRequest(origin, redeem);
  expect(issued.status).toBe(200);
  const accessToken = issued.body.access_token as string;
  const refreshToken = issued.body.refresh_token as string;
  secrets.push(code, accessToken, refreshToken);

  // The same code again: refused (and the tokens it gave revoked).
  expect(await tokenRequest(origin, redeem)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });

  // A second sign-in's grant: refreshed once, then its spent refresh token presented again.
  // (The first grant was revoked by the reused code; its access token is no longer good.)
  const { verifier: verifier2, challenge: challenge2 } = pkce();
  authorize.searchParams.set('code_challenge', challenge2);
  const second = await reachConsent(h.browser, authorize.href, 'alice');
  let code2: string;
  try {
    const answered = callback.next();
    await answerConsent(second.page, 'approve');
    code2 = (await answered).searchParams.get('code')!;
  } finally {
    await second.page.context().close();
  }
  const tokens2 = await tokenRequest(origin, { ...redeem, code: code2, code_verifier: verifier2 });
  expect(tokens2.status).toBe(200);
  secrets.push(code2, tokens2.body.access_token as string, tokens2.body.refresh_token as string);

  // A tool call with the second grant's access token: its record carries the client id.
  const client = await connectClient(new URL(`${origin}/mcp`), {}, undefined, { authorization: `Bearer ${tokens2.body.access_token as string}` });
  try {
    expect(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'audited' } }))).toContain('audited');
  } finally {
    await client.close();
  }

  const rotated = await tokenRequest(origin, { grant_type: 'refresh_token', refresh_token: tokens2.body.refresh_token as string, client_id: clientId });
  expect(rotated.status).toBe(200);
  secrets.push(rotated.body.access_token as string, rotated.body.refresh_token as string);
  expect(await tokenRequest(origin, { grant_type: 'refresh_token', refresh_token: tokens2.body.refresh_token as string, client_id: clientId })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });

  // The gateway's close drains the audit queue into the file.
  await h.gateway.close();
  records = (await readFile(auditPath, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as AuditRecord);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.idp.close(), h?.callback.close()]);
  if (h) await rm(h.dir, { recursive: true, force: true });
});

describe('the front door in the audit records', () => {
  it('a token issued: token.issued with the principal, the DCR client id, the grant type and the resource', () => {
    const issued = records.filter((r) => r.event === 'token.issued');
    expect(issued.map((r) => r.detail?.grantType)).toEqual(['authorization_code', 'authorization_code', 'refresh_token']);
    expect(issued[0]).toMatchObject({
      schema: 'switchyard.audit/1',
      principal: `${h!.idp.issuer}|alice`,
      clientId,
      decision: 'allow',
      outcome: 'ok',
      detail: { grantType: 'authorization_code', resource: `${h!.origin}/mcp`, grant: expect.stringMatching(/^[\w-]{16}$/) },
    });
  });

  it('a reused code and a reused refresh token: token.refused with the reason; the reuse revokes the grant', () => {
    const refused = records.filter((r) => r.event === 'token.refused');
    expect(refused).toContainEqual(expect.objectContaining({ clientId, decision: 'deny', outcome: 'refused', reason: 'reused', detail: { grantType: 'authorization_code' } }));
    expect(refused).toContainEqual(expect.objectContaining({ clientId, decision: 'deny', outcome: 'refused', reason: 'reused', detail: { grantType: 'refresh_token', revoked: 'grant' } }));
  });

  it('each approved consent: a sign_in of the principal to the client', () => {
    const signIns = records.filter((r) => r.event === 'sign_in');
    expect(signIns).toHaveLength(2);
    expect(signIns[0]).toMatchObject({ principal: `${h!.idp.issuer}|alice`, clientId, decision: 'allow', outcome: 'ok', detail: { step: 'consent', resource: `${h!.origin}/mcp` } });
  });

  it('a tool call with a front-door token carries the client id the token was issued to', () => {
    const call = records.find((r) => r.event === 'tool.call');
    expect(call).toMatchObject({ principal: `${h!.idp.issuer}|alice`, team: 'eng', clientId, endpoint: '/mcp', name: 'everything__echo', decision: 'allow', outcome: 'ok' });
  });

  it('no token or code is in any record', () => {
    const text = records.map((r) => JSON.stringify(r)).join('\n');
    expect(secrets.length).toBe(8);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
