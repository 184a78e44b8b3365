// Keeping a client session whole across an upstream restart: what the client has seen of each
// upstream's lists (to send list_changed only when a restarted upstream lists something else),
// and the subscriptions (at most MAX_SUBSCRIPTIONS a session) and log level to renew on the new
// upstream session, a few at a time.
import { GatewayError } from '../mcp/errors.js';
import { notification } from '../mcp/jsonrpc.js';
import { supportsMethod } from '../mcp/capabilities.js';
import { listChangedOf } from '../mcp/methods.js';
import type { DownstreamSession } from './session.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { Logger } from '../util/log.js';
import { extendFingerprint, type Catalog, type ListKind, type PageObserver } from '../names/lists.js';

/** Records, page by page, what the client is shown of each upstream's list of `kind`. */
export function listObserver(session: DownstreamSession, kind: ListKind): PageObserver {
  return ({ upstream, items, first, more }) => {
    const views = session.links.get(upstream)?.listViews;
    if (!views) return;
    const previous = first ? '' : (views.get(kind)?.fingerprint ?? '');
    views.set(kind, { fingerprint: extendFingerprint(previous, items), complete: !more });
  };
}

/** Resource subscriptions one session may hold across its upstreams: each is held upstream, and renewed after a restart. */
export const MAX_SUBSCRIPTIONS = 1_000;
/** Subscriptions renewed at once on a restarted upstream session (not a session's thousand together). */
export const RENEWALS_AT_ONCE = 16;

/**
 * Takes `uri`'s place among the session's subscriptions before the upstream is asked, so that
 * concurrent subscribes cannot pass MAX_SUBSCRIPTIONS together; refused past it. Returns what
 * gives the place back when the upstream refused (nothing for a URI already subscribed).
 */
export function claimSubscription(session: DownstreamSession, upstream: string, uri: string): () => void {
  const uris = session.links.get(upstream)?.subscriptions;
  if (!uris || uris.has(uri)) return () => {};
  let held = 0;
  for (const [, record] of session.links.entries()) held += record.subscriptions.size;
  if (held >= MAX_SUBSCRIPTIONS) throw new GatewayError('invalid_request', `Too many resource subscriptions: at most ${MAX_SUBSCRIPTIONS} per session; unsubscribe from one first`);
  uris.add(uri);
  return () => void uris.delete(uri);
}

/** Runs `renew` for each of `items`, RENEWALS_AT_ONCE at a time; resolves to how many failed. */
export async function renewBounded<T>(items: Iterable<T>, renew: (item: T) => Promise<unknown>): Promise<number> {
  const all = [...items];
  let next = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (next < all.length) await renew(all[next++]!).catch(() => void failed++);
  };
  await Promise.all(Array.from({ length: Math.min(RENEWALS_AT_ONCE, all.length) }, worker));
  return failed;
}

/** Keeps the session's record of resource subscriptions in step with a successful (un)subscribe. */
export function recordSubscription(session: DownstreamSession, upstream: string, uri: string, subscribed: boolean): void {
  const uris = session.links.get(upstream)?.subscriptions;
  if (!uris) return;
  if (subscribed) uris.add(uri);
  else uris.delete(uri);
}

/**
 * After `client`'s upstream came back: renew the session's subscriptions and log level on it,
 * re-read the lists the client has seen, and send list_changed for each that differs (or that
 * the client had not read to the end).
 */
export async function afterRestart(session: DownstreamSession, client: UpstreamClient, catalog: Catalog, logger: Logger): Promise<void> {
  const subscriptions = supportsMethod(client.capabilities, 'resources/subscribe') ? (session.links.get(client.name)?.subscriptions ?? []) : [];
  const renewing = renewBounded(subscriptions, (uri) => client.request('resources/subscribe', { uri }));
  const renewals: Promise<unknown>[] = [];
  if (session.logLevel !== undefined && supportsMethod(client.capabilities, 'logging/setLevel')) {
    renewals.push(client.request('logging/setLevel', { level: session.logLevel }));
  }
  const sent = new Set<string>();
  const views = session.links.get(client.name)?.listViews;
  const checks = [...(views ?? [])].map(async ([kind, view]) => {
    const method = listChangedOf(kind as ListKind);
    if (!method) return;
    const fresh = await catalog.fingerprint(kind as ListKind, client).catch(() => undefined);
    if (view.complete && fresh === view.fingerprint) return;
    if (sent.has(method)) return;
    sent.add(method);
    session.deliver(notification(method));
  });
  const [unrenewed, outcomes] = await Promise.all([renewing, Promise.allSettled([...renewals, ...checks])]);
  const failed = unrenewed + outcomes.filter((o) => o.status === 'rejected').length;
  if (failed > 0) logger.warn('some state could not be renewed after an upstream restart', { upstream: client.name, failed });
}
