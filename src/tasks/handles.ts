// Task ids as clients see them: opaque handles sealed (AES-256-GCM) under `sessions.keys`, so
// any replica sharing the keys opens one and knows where the task is without asking anyone.
// A handle names the principal it was made for, and either a task the gateway made (its id in
// the task store) or an upstream's task (the upstream, its own task id, the tool that made it,
// and the upstream session where one is needed). Two upstreams issuing the same id make two
// handles. A handle that does not open (tampered, sealed under a key no longer configured) or
// that names another principal is an unknown task, whichever it was.
import { randomBytes } from 'node:crypto';
import { Sealer } from '../credentials/sealed.js';
import { isObject } from '../mcp/jsonrpc.js';

/** Binds a sealed value to its use: a sealed credential or session value is never a handle. */
const AAD = 'switchyard task handle v1';

export type TaskHandle =
  | { kind: 'gateway'; id: string; principal: string }
  | { kind: 'upstream'; upstream: string; taskId: string; tool: string; session?: string; principal: string };

export class TaskHandles {
  readonly #sealer: Sealer;

  /** Without keys, a random one: handles then open on this replica only (like its session ids). */
  constructor(keys: readonly string[] | undefined) {
    this.#sealer = new Sealer(keys && keys.length > 0 ? keys : [randomBytes(32).toString('base64url')]);
  }

  seal(handle: TaskHandle): string {
    const claims =
      handle.kind === 'gateway'
        ? { k: 'g', i: handle.id, p: handle.principal }
        : { k: 'u', u: handle.upstream, t: handle.taskId, x: handle.tool, p: handle.principal, ...(handle.session !== undefined ? { s: handle.session } : {}) };
    return this.#sealer.sealJson(claims, AAD);
  }

  /** The handle, when it opens and is `principal`'s ('' without one); else undefined. */
  open(value: string, principal: string): TaskHandle | undefined {
    if (value.length > 8_192) return undefined;
    const text = this.#sealer.open(value, AAD);
    if (text === undefined) return undefined;
    let claims: unknown;
    try {
      claims = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (!isObject(claims) || claims.p !== principal) return undefined;
    if (claims.k === 'g' && typeof claims.i === 'string') return { kind: 'gateway', id: claims.i, principal };
    if (claims.k === 'u' && typeof claims.u === 'string' && typeof claims.t === 'string' && typeof claims.x === 'string') {
      return { kind: 'upstream', upstream: claims.u, taskId: claims.t, tool: claims.x, principal, ...(typeof claims.s === 'string' ? { session: claims.s } : {}) };
    }
    return undefined;
  }
}
