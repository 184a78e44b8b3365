// /admin/pins over HTTP (src/http/admin-pins.ts): a principal without the admin scope gets 403
// with the RFC 6750 §3.1 challenge the MCP endpoint gives (error="insufficient_scope" and the
// scope needed), and a method other than GET and POST gets 405 with Allow, not 404.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const ADMIN_KEY = 'sk-switchyard-admin-3b9e1f07c2d84a56';
const USER_KEY = 'sk-switchyard-user-8c4a2e6f1d0b7935';

let dir: string;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-admin-pins-'));
});

afterEach(async () => {
  await Promise.allSettled(gateways.splice(0).map((gw) => gw.close()));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function start(): Promise<URL> {
  const state = join(dir, 'state');
  await writeFile(state, 'v1');
  const auth = { apiKeys: [{ id: 'user', hash: hashApiKey(USER_KEY), scopes: ['mcp'] }, { id: 'ops', hash: hashApiKey(ADMIN_KEY), scopes: ['pins-admin'] }], admin: { scopes: ['pins-admin', 'ops-all'] } };
  const gw = await startGateway({ pinning: { mode: 'hide' }, auth, upstreams: { drift: { stdio: { command: NODE, args: [join(FIXTURES, 'drifting-server.mjs')], env: { STATE_FILE: state } } } } });
  gateways.push(gw);
  return new URL('/admin/pins', gw.url);
}

describe('/admin/pins over HTTP', () => {
  it('403 without the admin scope carries WWW-Authenticate: Bearer error="insufficient_scope" with the scopes', async () => {
    const admin = await start();
    for (const method of ['GET', 'POST']) {
      const forbidden = await fetch(admin, { method, headers: { authorization: `Bearer ${USER_KEY}` }, ...(method === 'POST' ? { body: '{}' } : {}) });
      expect(forbidden.status).toBe(403);
      const challenge = forbidden.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer /);
      expect(challenge).toContain('error="insufficient_scope"');
      expect(challenge).toContain('scope="pins-admin ops-all"');
      expect(await forbidden.json()).toEqual({ error: 'forbidden', message: 'needs one of the scopes pins-admin, ops-all' });
    }
    const ok = await fetch(admin, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('www-authenticate')).toBeNull();
  });

  it('PUT, DELETE and PATCH get 405 with Allow: GET, POST', async () => {
    const admin = await start();
    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      for (const headers of [{}, { authorization: `Bearer ${ADMIN_KEY}` }] as Record<string, string>[]) {
        const refused = await fetch(admin, { method, headers });
        expect(refused.status, method).toBe(405);
        expect(refused.headers.get('allow')).toBe('GET, POST');
        expect(await refused.json()).toMatchObject({ error: 'method_not_allowed' });
      }
    }
  });
});
