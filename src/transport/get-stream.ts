// What the Streamable HTTP transport knows of an upstream's GET stream and of a lost session:
// whether the server serves GET streams at all (learnt once, shared by its sessions), and
// whether an answer says the session the request carried is gone.
/** How long a GET answered 405 (no server-initiated stream) is believed for new sessions. */
const GET_REFUSAL_MEMORY_MS = 5 * 60_000;

/**
 * Whether an upstream serves GET streams (transports.mdx: it MAY answer 405). Learnt from one
 * session and believed for a while, so a server without them is not asked once per session.
 */
export class GetStreamSupport {
  #refusedAt: number | undefined;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  get worthTrying(): boolean {
    return this.#refusedAt === undefined || this.#now() - this.#refusedAt >= GET_REFUSAL_MEMORY_MS;
  }

  refused(): void {
    this.#refusedAt = this.#now();
  }
}

/**
 * Whether an answer to a request that carried a session id says the session is gone: 404 (the
 * spec's way), or a 400 whose body names the session, as the SDK's example servers (and
 * server-everything) answer an id they no longer know ("Bad Request: No valid session ID provided").
 */
export function namesLostSession(statusCode: number, text: string): boolean {
  return statusCode === 404 || (statusCode === 400 && /session/i.test(text));
}
