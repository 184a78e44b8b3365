// /admin/pins: operators read and decide pinned tool definitions over HTTP. Served only when auth
// is on; a principal needs one of auth.admin.scopes (403 with an insufficient_scope challenge
// otherwise). GET lists every pin and the diff of each definition waiting; POST { action,
// upstream, name, kind?, digest? } approves or rejects one, recorded as decided by the principal;
// any other method gets 405.
import type { IncomingMessage } from 'node:http';
import type { Context, Hono } from 'hono';
import type { Principal } from '../auth/principal.js';
import { isObject } from '../mcp/jsonrpc.js';
import type { PinOperations } from '../pinning/setup.js';
import { readBodyWithin } from './input.js';

export const ADMIN_PINS_PATH = '/admin/pins';
const MAX_BODY_BYTES = 16 * 1024;

export interface AdminPinsDeps {
  operations: PinOperations;
  /** Read at each request (a reload may change them). */
  scopes: () => readonly string[];
  /** The request's principal, or the refusal (401) the MCP endpoint would give. */
  authenticate: (c: Context) => Principal | Response | Promise<Principal | Response>;
}

function problem(status: 400 | 403 | 404 | 405 | 409 | 413, error: string, message: string, headers?: Record<string, string>): Response {
  return Response.json({ error, message }, { status, ...(headers ? { headers } : {}) });
}

/** RFC 6750 §3.1, as the MCP endpoint answers a token without the scope it needs. */
function insufficientScope(scopes: readonly string[]): Response {
  const quoted = (value: string): string => `"${value.replace(/["\\]/g, '')}"`;
  const message = `needs one of the scopes ${scopes.join(', ')}`;
  const challenge = `Bearer error="insufficient_scope", scope=${quoted(scopes.join(' '))}, error_description=${quoted(`the principal lacks ${message.slice('needs '.length)}`)}`;
  return problem(403, 'forbidden', message, { 'www-authenticate': challenge });
}

/** Set by @hono/node-server: the Node request, read directly for the body. */
type Bound = { Bindings: { incoming?: IncomingMessage } };

export function mountAdminPins<E extends Bound>(app: Hono<E>, deps: AdminPinsDeps): void {
  const admitted = async (c: Context): Promise<Principal | Response> => {
    const principal = await deps.authenticate(c);
    if (principal instanceof Response) return principal;
    const scopes = deps.scopes();
    if (!principal.scopes.some((scope) => scopes.includes(scope))) return insufficientScope(scopes);
    return principal;
  };

  app.get(ADMIN_PINS_PATH, async function listPins(c) {
    const principal = await admitted(c);
    if (principal instanceof Response) return principal;
    const upstream = c.req.query('upstream');
    return c.json({ pins: await deps.operations.list(upstream), diffs: await deps.operations.diffs(upstream, c.req.query('name')) });
  });

  app.post(ADMIN_PINS_PATH, async function decidePin(c) {
    const principal = await admitted(c);
    if (principal instanceof Response) return principal;
    // Read no further than the bound: a chunked body declares no length to check first.
    const text = await readBodyWithin(MAX_BODY_BYTES, c.req.raw, c.env?.incoming);
    if (text === undefined) return problem(413, 'too_large', `the body may have at most ${MAX_BODY_BYTES} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return problem(400, 'invalid_request', 'the body must be JSON');
    }
    const given = isObject(body) ? body : {};
    const { action, upstream, name, kind = 'tools', digest } = given;
    if ((action !== 'approve' && action !== 'reject') || typeof upstream !== 'string' || typeof name !== 'string' || (kind !== 'tools' && kind !== 'prompts') || (digest !== undefined && typeof digest !== 'string')) {
      return problem(400, 'invalid_request', 'expected { "action": "approve" | "reject", "upstream": string, "name": string, "kind"?: "tools" | "prompts", "digest"?: string }');
    }
    const outcome = await deps.operations.decide(upstream, { kind, name, ...(digest !== undefined ? { digest } : {}) }, action, principal.id);
    if (typeof outcome === 'string') return problem(outcome.startsWith('no upstream') || outcome.startsWith('nothing') ? 404 : 409, 'not_decided', outcome);
    return c.json({ decided: action, upstream, kind, name, by: principal.id, pins: await deps.operations.list(upstream) });
  });

  // Any other method (HEAD is served by GET): the resource exists, the method does not (RFC 9110 §15.5.6).
  app.all(ADMIN_PINS_PATH, () => problem(405, 'method_not_allowed', 'use GET or POST', { allow: 'GET, POST' }));
}
