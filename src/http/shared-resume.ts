// A Last-Event-ID of a stream another replica wrote (sessions.store: redis): its events after
// that id are replayed from the shared log. The GET stream then goes on here (this replica
// now holds the session's upstream streams). A request stream is followed in the log until its
// answer is written; if the replica writing it is gone first, its requests are answered here
// with an error the client may retry, and the stream is ended in the log, so the next
// resumption is told (204) that nothing more will come.
import { failure } from '../mcp/jsonrpc.js';
import { GatewayError, toJsonRpcError } from '../mcp/errors.js';
import type { DownstreamSession } from '../links/session.js';
import type { SharedEvent, SharedStream, SharedStreamLog } from '../session/shared-log.js';
import { encodeSseEvent } from '../util/sse.js';
import { SseConnection } from './sse-connection.js';
import { primes, type StreamSettings } from './responder.js';
import { refusals, refuse } from './refusals.js';

/** How often a request stream another replica writes is read again while its answer is due. */
const FOLLOW_EVERY_MS = 200;

/** The reply to a resumption of a stream this replica does not know; undefined when no replica wrote it. */
export async function resumeFromSharedLog(session: DownstreamSession, log: SharedStreamLog, event: { key: string; seq: number }, settings: StreamSettings): Promise<Response | SseConnection | undefined> {
  const written = await log.read(session.id, event.key, event.seq).catch(() => undefined);
  if (!written) return undefined;
  // Some of what followed it were dropped: refused, as the replica that wrote it refuses it.
  if (written.dropped) return refuse(refusals.lastEventIdTooOld);
  if (written.kind === 'standalone') return continueStandalone(session, event.key, written.events, settings);
  // Over, and the client saw all of it: 204 tells it to stop reconnecting (as streams.ts's exhaustedAfter).
  if (written.done && written.events.length === 0) return new Response(null, { status: 204 });
  const connection = new SseConnection({}, settings.keepAlives ?? settings.keepAliveMs, settings.bounds?.request);
  void follow(session, log, event.key, written, event.seq, connection);
  return connection;
}

function continueStandalone(session: DownstreamSession, key: string, events: SharedEvent[], settings: StreamSettings): SseConnection {
  const connection = new SseConnection({}, settings.keepAlives ?? settings.keepAliveMs, settings.bounds?.standalone);
  for (const event of events) connection.write(encodeSseEvent(event.data, `${key}.${event.seq}`));
  const stream = session.standalone;
  stream.attach(connection, primes(session) ? { primeRetryMs: settings.retryMs } : {});
  connection.detachFrom = stream;
  return connection;
}

async function follow(session: DownstreamSession, log: SharedStreamLog, key: string, first: SharedStream, after: number, connection: SseConnection): Promise<void> {
  let state: SharedStream | undefined = first;
  let last = after;
  try {
    while (state && connection.open) {
      // Dropped while followed: the connection ends, and the client's resumption is refused.
      if (state.dropped) return;
      for (const event of state.events) connection.write(encodeSseEvent(event.data, `${key}.${event.seq}`));
      last = state.events.at(-1)?.seq ?? last;
      if (state.done) return;
      if (!state.writerAlive) return giveUp(session, log, key, state, last, connection);
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_EVERY_MS));
      state = await log.read(session.id, key, last).catch(() => undefined);
    }
  } finally {
    connection.close();
  }
}

/** The replica answering this stream's requests is gone: they are answered here, and the stream ended for good. */
function giveUp(session: DownstreamSession, log: SharedStreamLog, key: string, state: SharedStream, last: number, connection: SseConnection): void {
  const reason = new GatewayError('upstream_unavailable', 'The gateway replica serving this request stopped before it answered; the request may be sent again');
  let seq = last;
  for (const id of state.requests) {
    const data = JSON.stringify(failure(id, toJsonRpcError(reason)));
    seq++;
    log.append(session.id, key, seq, data);
    connection.write(encodeSseEvent(data, `${key}.${seq}`));
  }
  log.end(session.id, key);
}
