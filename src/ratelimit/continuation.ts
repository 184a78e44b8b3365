// One logical tools/call costs one perTool token, however many rounds of input it takes. A
// 2026-07-28 client calling a 2026-07-28 upstream retries each round as a new tools/call carrying
// the upstream's requestState, and the gateway keeps nothing between rounds (any replica may take
// the retry). So, for a tool under a perTool limit, the requestState the client is handed is the
// upstream's own wrapped in a mark the gateway signs (HMAC-SHA256) over the principal, the tool,
// its arguments, the round, an expiry and a nonce: `sy1.<payload>.<signature>`. The upstream's
// state rides in the payload in clear (the client saw it bare before), so a mark that does not
// check out still gives the upstream its own state back; only the charge depends on the mark.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { stableJson } from '../util/stable-json.js';

const PREFIX = 'sy1.';
/** How long a mark takes the next round without a token: past it, the retry is a new call. */
export const MARK_TTL_MS = 10 * 60_000;
/** Rounds one token buys; the next retry is charged as a new call (a server may ask forever). */
export const MAX_FREE_ROUNDS = 16;

/** What a mark says, once its signature checked out for the principal, tool and arguments. */
export interface Mark {
  /** The upstream's own requestState (none when it made none). */
  state: string | undefined;
  /** Which retry of the call this mark is for (1 for the first). */
  round: number;
  /** Unique to the mark: the store takes it once (limiter.ts). */
  nonce: string;
  expires: number;
}

interface Payload {
  s?: string;
  r: number;
  e: number;
  n: string;
}

export class ContinuationMarks {
  readonly #keys: readonly Buffer[];
  readonly #now: () => number;

  /** `keys`: the first signs, every one verifies; without any, a random key (marks then check out on this replica, under this limiter, only). */
  constructor(keys: readonly string[] = [], now: () => number = Date.now) {
    const secrets = keys.length > 0 ? keys.map((k) => Buffer.from(k)) : [randomBytes(32)];
    this.#keys = secrets.map((secret) => createHmac('sha256', secret).update('switchyard continuation mark v1').digest());
    this.#now = now;
  }

  /** The requestState for round `round` of `tool`'s call with `args`, carrying the upstream's own `state`. */
  mark(principal: string, tool: string, args: unknown, state: string | undefined, round: number): string {
    const payload: Payload = { ...(state === undefined ? {} : { s: state }), r: round, e: this.#now() + MARK_TTL_MS, n: randomBytes(12).toString('base64url') };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${PREFIX}${body}.${sign(this.#keys[0]!, body, principal, tool, args)}`;
  }

  /** The mark in `value` if it is one this gateway signed for this principal, tool and arguments, unexpired; else undefined. */
  open(value: unknown, principal: string, tool: string, args: unknown): Mark | undefined {
    const parts = split(value);
    if (!parts) return undefined;
    const given = Buffer.from(parts.signature);
    const valid = this.#keys.some((key) => {
      const expected = Buffer.from(sign(key, parts.body, principal, tool, args));
      return expected.length === given.length && timingSafeEqual(expected, given);
    });
    if (!valid) return undefined;
    const payload = parts.payload;
    if (payload.e <= this.#now() || payload.r > MAX_FREE_ROUNDS) return undefined;
    return { state: payload.s, round: payload.r, nonce: payload.n, expires: payload.e };
  }
}

/**
 * The requestState to send the upstream: the upstream's own, out of a mark (signed or not: the
 * upstream judges its own state); anything that is not a mark as it is.
 */
export function upstreamRequestState(value: unknown): unknown {
  const parts = split(value);
  return parts ? parts.payload.s : value;
}

function sign(key: Buffer, body: string, principal: string, tool: string, args: unknown): string {
  return createHmac('sha256', key).update(`${body}\n${principal}\n${tool}\n${stableJson(args ?? {})}`).digest('base64url');
}

function split(value: unknown): { body: string; signature: string; payload: Payload } | undefined {
  // No bound of its own: whatever mark() made must open (the body it came in is bounded, listen.maxBodyBytes).
  if (typeof value !== 'string' || !value.startsWith(PREFIX)) return undefined;
  const dot = value.indexOf('.', PREFIX.length);
  if (dot < 0) return undefined;
  const body = value.slice(PREFIX.length, dot);
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isPayload(payload)) return undefined;
  return { body, signature: value.slice(dot + 1), payload };
}

function isPayload(value: unknown): value is Payload {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  return (p.s === undefined || typeof p.s === 'string') && Number.isInteger(p.r) && typeof p.e === 'number' && typeof p.n === 'string';
}
