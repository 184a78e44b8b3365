// Attaching a connection to a session stream (src/session/streams.ts) reads the session's replay
// log only when there is something to replay: every POST answered as a stream opens a stream,
// and the log holds the events of all the session's streams. Sending tells the connection each
// event's length in UTF-8, counted once for the log and the connection both.
import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';
import { EventLog, SessionStream, type StreamConnection } from '../../src/session/streams.js';

class Connection implements StreamConnection {
  readonly writes: string[] = [];
  readonly sizes: (number | undefined)[] = [];
  write(chunk: string, _droppable?: string, bytes?: number): void {
    this.writes.push(chunk);
    this.sizes.push(bytes);
  }
  close(): void {}
}

const note = (n: number): JsonRpcMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: n } });

describe('SessionStream.attach', () => {
  it('does not read the log for a stream with nothing unsent, and reads it for one with events no connection had', () => {
    const log = new EventLog({ events: 1_000, bytes: 1_000_000 });
    const busy = new SessionStream('request', log);
    for (let n = 1; n <= 500; n++) busy.send(note(n));
    let reads = 0;
    const after = log.after.bind(log);
    log.after = (...args) => (reads++, after(...args));
    expect(new SessionStream('request', log).attach(new Connection())).toBe(true);
    expect(reads).toBe(0);
    const late = new SessionStream('request', log);
    late.send(note(1));
    const connection = new Connection();
    expect(late.attach(connection)).toBe(true);
    expect(reads).toBe(1);
    expect(connection.writes).toEqual([`id: ${late.key}.1\nevent: message\ndata: ${JSON.stringify(note(1))}\n\n`]);
  });

  it('tells the connection each event\'s length in UTF-8, multi-byte text included', () => {
    const stream = new SessionStream('request', new EventLog({ events: 10, bytes: 1_000_000 }));
    const connection = new Connection();
    stream.attach(connection);
    stream.send({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'naïve — €5 ✓' }] } });
    expect(connection.sizes).toEqual([Buffer.byteLength(connection.writes[0]!)]);
    expect(connection.sizes[0]).toBeGreaterThan(connection.writes[0]!.length);
  });
});
