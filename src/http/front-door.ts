// The front door's routes (src/frontdoor/ does the work): the authorization server metadata in
// every form hosts fetch, the JWKS, the browser flow (authorize, the IdP's callback, consent) and
// the back channel (token, register, revoke). Bodies are read within a small bound, and no further.
import type { IncomingMessage } from 'node:http';
import type { Context, Hono } from 'hono';
import type { FrontDoor } from '../frontdoor/front-door.js';
import { FRONT_DOOR_PATHS } from '../frontdoor/front-door.js';
import { parse as parseCookies } from 'hono/utils/cookie';
import { readBodyWithin } from './input.js';

/** Forms and registrations are a few hundred bytes; this bounds what a client can make us read. */
const MAX_BODY_BYTES = 16 * 1024;
/** Public documents any origin may read (RFC 8414 and JWKS carry nothing secret). */
const PUBLIC = { 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=300' };

type Bound = { Bindings: { incoming?: IncomingMessage } };

export function mountFrontDoor<E extends Bound>(app: Hono<E>, frontDoor: FrontDoor): void {
  for (const { path, openid } of frontDoor.metadataPaths()) app.get(path, (c) => c.json(frontDoor.metadata(openid), 200, PUBLIC));
  app.get(FRONT_DOOR_PATHS.jwks, async (c) => c.json(await frontDoor.keys.jwks(), 200, PUBLIC));
  const browser = (c: Context<E>) => ({ url: new URL(c.req.url), cookies: parseCookies(c.req.header('cookie') ?? ''), address: c.env?.incoming?.socket.remoteAddress });
  app.get(FRONT_DOOR_PATHS.authorize, (c) => frontDoor.authorization.authorize(browser(c)));
  app.get(FRONT_DOOR_PATHS.callback, (c) => frontDoor.authorization.callback(browser(c)));
  app.post(FRONT_DOOR_PATHS.consent, async (c) => {
    const form = await formOf(c);
    return form instanceof Response ? form : frontDoor.authorization.consent(form, browser(c));
  });
  app.post(FRONT_DOOR_PATHS.token, async (c) => {
    const form = await formOf(c);
    return form instanceof Response ? form : frontDoor.tokens.token(form);
  });
  app.post(FRONT_DOOR_PATHS.revoke, async (c) => {
    const form = await formOf(c);
    return form instanceof Response ? form : frontDoor.tokens.revoke(form);
  });
  if (frontDoor.metadata().registration_endpoint !== undefined) {
    app.post(FRONT_DOOR_PATHS.register, async (c) => {
      const text = await bodyOf(c);
      if (text instanceof Response) return text;
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return c.json({ error: 'invalid_client_metadata', error_description: 'the registration is not JSON' }, 400);
      }
      const address = c.env?.incoming?.socket.remoteAddress ?? 'unknown';
      return frontDoor.tokens.register(body, address);
    });
  }
}

/** The body within MAX_BODY_BYTES, read no further: a chunked body declares no length to check first. */
async function bodyOf<E extends Bound>(c: Context<E>): Promise<string | Response> {
  const text = await readBodyWithin(MAX_BODY_BYTES, c.req.raw, c.env?.incoming);
  return text ?? c.json({ error: 'invalid_request', error_description: `the body is larger than ${MAX_BODY_BYTES} bytes` }, 413);
}

/** RFC 6749 §3.2: token requests are application/x-www-form-urlencoded. */
async function formOf<E extends Bound>(c: Context<E>): Promise<URLSearchParams | Response> {
  if (!/^application\/x-www-form-urlencoded\b/i.test(c.req.header('content-type') ?? '')) {
    return c.json({ error: 'invalid_request', error_description: 'the body must be application/x-www-form-urlencoded' }, 400, { 'cache-control': 'no-store' });
  }
  const text = await bodyOf(c);
  return text instanceof Response ? text : new URLSearchParams(text);
}
