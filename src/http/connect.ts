// The connect pages of per-user upstream credentials (credentials/connect-flow.ts does the
// work): the connect URL itself, the IdP login's and the upstream's callbacks, the secret form,
// sign-out, and the Client ID Metadata Document of each upstream.
import type { Hono } from 'hono';
import { clientMetadataDocument } from '../credentials/oauth-client.js';
import type { BrowserRequest, ConnectFlows, Step } from '../credentials/connect-flow.js';
import { isLoopback } from '../config/schema.js';
import type { IncomingMessage } from 'node:http';
import { parse as parseCookies } from 'hono/utils/cookie';
import { readBodyWithin } from './input.js';

export interface ConnectDeps {
  flows: ConnectFlows;
  /** Upstreams users sign in to. */
  upstreams: () => readonly string[];
  /** The origin connect URLs are made under. */
  base: () => string;
}

const MAX_FORM_BYTES = 16 * 1024;

export function mountConnect<E extends { Bindings: { incoming?: IncomingMessage } }>(app: Hono<E>, deps: ConnectDeps): void {
  const { flows } = deps;
  const browserOf = (c: { req: { header(name: string): string | undefined }; env: E['Bindings'] }): BrowserRequest => ({
    cookies: parseCookies(c.req.header('cookie') ?? ''),
    loopback: isLoopback(c.env?.incoming?.socket.remoteAddress?.replace(/^::ffff:/, '') ?? ''),
  });
  app.get('/connect/login', async (c) => answer(await flows.loggedIn(new URL(c.req.url), browserOf(c))));
  app.get('/connect/callback', async (c) => answer(await flows.authorized(new URL(c.req.url), browserOf(c))));
  app.post('/connect/secret', async (c) => {
    // Read no further than the bound: a chunked body declares no length to check first.
    const body = await readBodyWithin(MAX_FORM_BYTES, c.req.raw, c.env?.incoming);
    if (body === undefined) return new Response(`form too large (at most ${MAX_FORM_BYTES} bytes)`, { status: 413 });
    return answer(await flows.secret(new URLSearchParams(body), browserOf(c)));
  });
  app.get('/connect/client/:file', (c) => {
    const upstream = /^([a-z0-9-]+)\.json$/.exec(c.req.param('file'))?.[1];
    if (!upstream || !deps.upstreams().includes(upstream) || !deps.base().startsWith('https:')) return c.notFound();
    const url = `${deps.base()}/connect/client/${upstream}.json`;
    return c.json(clientMetadataDocument(url, flows.redirectUri, `Switchyard (${upstream})`));
  });
  app.get('/connect/:ticket', async (c) => answer(await flows.open(c.req.param('ticket'), browserOf(c))));
  app.delete('/connect/:upstream', async (c) => answer(await flows.signOut(c.req.param('upstream'), browserOf(c))));
}

function answer(step: Step): Response {
  const headers = new Headers({ 'cache-control': 'no-store', 'referrer-policy': 'same-origin', 'x-frame-options': 'DENY', 'content-security-policy': "default-src 'none'; form-action 'self'" });
  for (const cookie of step.cookies ?? []) headers.append('set-cookie', cookie);
  if ('redirect' in step) {
    headers.set('location', step.redirect);
    return new Response(null, { status: 302, headers });
  }
  headers.set('content-type', 'text/html; charset=utf-8');
  return new Response(step.html, { status: step.status, headers });
}
