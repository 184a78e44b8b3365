// The session layer's types as the router uses them: client sessions whose upstream sessions
// are UpstreamClients (the session layer itself knows them only as things it closes).
import type { DownstreamSession as Session, SessionUpstream as Upstream } from '../session/session.js';
import type { SessionStore as Store } from '../session/store.js';
import type { UpstreamClient } from '../upstream/client.js';

export type DownstreamSession = Session<UpstreamClient>;
export type SessionStore = Store<UpstreamClient>;
export type SessionUpstream = Upstream<UpstreamClient>;
