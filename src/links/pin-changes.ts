// What pinning withholds of an upstream changed (a drift is held back, an approval lets it
// through): every session that listed that upstream's tools or prompts hears list_changed, and
// forgets the names it knew there, so its next call or list reads them again.
import { notification } from '../mcp/jsonrpc.js';
import { forgetNames } from './existence.js';
import type { DownstreamSession } from './session.js';

const LIST_CHANGED = { tools: 'notifications/tools/list_changed', prompts: 'notifications/prompts/list_changed' } as const;

export function announcePinChange(sessions: Iterable<DownstreamSession>, upstream: string): void {
  for (const session of sessions) {
    const record = session.links.get(upstream);
    if (!record || session.closed) continue;
    forgetNames(session, upstream);
    for (const kind of ['tools', 'prompts'] as const) if (record.listViews.has(kind)) session.deliver(notification(LIST_CHANGED[kind]));
  }
}
