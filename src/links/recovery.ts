// Keeping a client session whole across an upstream restart: what the client has seen of each
// upstream's lists (to send list_changed only when a restarted upstream lists something else),
// and the subscriptions and log level to renew on the new upstream session.
import { notification, type JsonObject } from '../mcp/jsonrpc.js';
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
  const renewals: Promise<JsonObject>[] = [];
  for (const uri of session.links.get(client.name)?.subscriptions ?? []) {
    if (supportsMethod(client.capabilities, 'resources/subscribe')) renewals.push(client.request('resources/subscribe', { uri }));
  }
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
  const outcomes = await Promise.allSettled([...renewals, ...checks]);
  const failed = outcomes.filter((o) => o.status === 'rejected').length;
  if (failed > 0) logger.warn('some state could not be renewed after an upstream restart', { upstream: client.name, failed });
}
