// The buffering behind resumable SSE streams (src/session/streams.ts): event ids, delivery of
// what a detached stream missed, Last-Event-ID replay bounded by the session's log, priming.
import { describe, expect, it } from 'vitest';
import { EventLog, parseEventId, SessionStream, type LogLimits, type StreamConnection } from '../../src/session/streams.js';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';

/** A connection that records what the stream wrote to it, and whether it was closed. */
class RecordingConnection implements StreamConnection {
  readonly writes: string[] = [];
  /** Writes that arrived after close(): a stream must never produce any. */
  readonly writesAfterClose: string[] = [];
  closed = false;

  write(chunk: string): void {
    (this.closed ? this.writesAfterClose : this.writes).push(chunk);
  }

  close(): void {
    this.closed = true;
  }

  /** The SSE events written so far, parsed field by field. */
  events(): { id?: string; data?: string; retry?: number }[] {
    return this.writes.map((chunk) => {
      const event: { id?: string; data?: string; retry?: number } = {};
      for (const line of chunk.split('\n')) {
        const colon = line.indexOf(':');
        if (colon <= 0) continue;
        const field = line.slice(0, colon);
        const value = line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') event.id = value;
        else if (field === 'data') event.data = value;
        else if (field === 'retry') event.retry = Number(value);
      }
      return event;
    });
  }

  /** The JSON-RPC messages written so far (events with data), in order. */
  messages(): JsonRpcMessage[] {
    return this.events()
      .filter((e) => e.data !== undefined && e.data !== '')
      .map((e) => JSON.parse(e.data!) as JsonRpcMessage);
  }

  ids(): string[] {
    return this.events()
      .filter((e) => e.data !== undefined && e.data !== '')
      .map((e) => e.id!);
  }
}

const ROOMY: LogLimits = { events: 1_000, bytes: 1_000_000 };

const note = (n: number): JsonRpcMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: n } });

/** The `n` of every note() message, in order. */
const numbers = (messages: JsonRpcMessage[]): unknown[] => messages.map((m) => ('params' in m ? m.params?.progress : undefined));

function streamWith(limits: LogLimits = ROOMY, kind: 'request' | 'standalone' = 'request'): { stream: SessionStream; log: EventLog } {
  const log = new EventLog(limits);
  return { stream: new SessionStream(kind, log), log };
}

describe('SessionStream event ids', () => {
  it('names every event <stream key>.<seq> with the sequence increasing from 1', () => {
    const { stream } = streamWith();
    const connection = new RecordingConnection();
    stream.attach(connection);
    for (let n = 1; n <= 3; n++) stream.send(note(n));
    expect(stream.key).toMatch(/^[0-9a-f]{12}$/);
    expect(connection.ids()).toEqual([`${stream.key}.1`, `${stream.key}.2`, `${stream.key}.3`]);
    expect(numbers(connection.messages())).toEqual([1, 2, 3]);
  });

  it('gives each stream of a session its own key', () => {
    const log = new EventLog(ROOMY);
    const keys = new Set(Array.from({ length: 20 }, () => new SessionStream('request', log).key));
    expect(keys.size).toBe(20);
  });

  it('keeps counting across connections, so ids never repeat within a stream', () => {
    const { stream } = streamWith();
    const first = new RecordingConnection();
    stream.attach(first);
    stream.send(note(1));
    stream.detach(first);
    const second = new RecordingConnection();
    stream.attach(second);
    stream.send(note(2));
    expect([...first.ids(), ...second.ids()]).toEqual([`${stream.key}.1`, `${stream.key}.2`]);
  });
});

describe('SessionStream delivery without Last-Event-ID', () => {
  it('writes a message sent while detached on the next attach', () => {
    const { stream } = streamWith();
    stream.send(note(1));
    expect(stream.attached).toBe(false);
    const connection = new RecordingConnection();
    expect(stream.attach(connection)).toBe(true);
    expect(connection.ids()).toEqual([`${stream.key}.1`]);
    expect(numbers(connection.messages())).toEqual([1]);
  });

  it('writes undelivered messages first, then new ones, in order', () => {
    const { stream } = streamWith();
    const first = new RecordingConnection();
    stream.attach(first);
    stream.send(note(1));
    stream.detach(first);
    stream.send(note(2));
    stream.send(note(3));
    const second = new RecordingConnection();
    stream.attach(second);
    stream.send(note(4));
    expect(numbers(first.messages())).toEqual([1]);
    expect(numbers(second.messages())).toEqual([2, 3, 4]);
  });

  it('does not write a message twice once a connection got it', () => {
    const { stream } = streamWith();
    stream.send(note(1));
    const first = new RecordingConnection();
    stream.attach(first);
    stream.send(note(2));
    stream.detach(first);
    const second = new RecordingConnection();
    stream.attach(second);
    expect(numbers(first.messages())).toEqual([1, 2]);
    expect(second.messages()).toEqual([]);
  });
});

describe('SessionStream replay after a Last-Event-ID', () => {
  it('replays only the events of that stream that followed the id', () => {
    const log = new EventLog(ROOMY);
    const mine = new SessionStream('request', log);
    const other = new SessionStream('request', log);
    // Interleaved, so the log holds both streams' events side by side.
    for (let n = 1; n <= 3; n++) {
      mine.send(note(n));
      other.send(note(100 + n));
    }
    const connection = new RecordingConnection();
    expect(mine.attach(connection, { after: 1 })).toBe(true);
    expect(connection.ids()).toEqual([`${mine.key}.2`, `${mine.key}.3`]);
    expect(numbers(connection.messages())).toEqual([2, 3]);
  });

  it('replays everything of the stream after seq 0, and never another stream\'s events', () => {
    const log = new EventLog(ROOMY);
    const standalone = new SessionStream('standalone', log);
    const request = new SessionStream('request', log);
    request.send(note(1));
    standalone.send(note(50));
    request.send(note(2));
    const connection = new RecordingConnection();
    standalone.attach(connection, { after: 0 });
    expect(connection.ids()).toEqual([`${standalone.key}.1`]);
    expect(numbers(connection.messages())).toEqual([50]);
  });

  it('replays events already written to an earlier connection (that one may have lost them)', () => {
    const { stream } = streamWith();
    const first = new RecordingConnection();
    stream.attach(first);
    for (let n = 1; n <= 3; n++) stream.send(note(n));
    const second = new RecordingConnection();
    stream.attach(second, { after: 1 });
    expect(numbers(second.messages())).toEqual([2, 3]);
  });

  it('after a replay, delivers only new events on the new connection', () => {
    const { stream } = streamWith();
    stream.send(note(1));
    stream.send(note(2));
    const connection = new RecordingConnection();
    stream.attach(connection, { after: 1 });
    stream.send(note(3));
    stream.detach(connection);
    const next = new RecordingConnection();
    stream.attach(next);
    expect(numbers(connection.messages())).toEqual([2, 3]);
    expect(next.messages()).toEqual([]);
  });
});

describe('SessionStream refusing a replay that would skip dropped events', () => {
  it('returns false when the count limit dropped events after the id', () => {
    const { stream } = streamWith({ events: 3, bytes: 1_000_000 });
    for (let n = 1; n <= 5; n++) stream.send(note(n));
    // The log holds 3, 4, 5: resuming after 1 would silently skip 2.
    expect(stream.attach(new RecordingConnection(), { after: 1 })).toBe(false);
    const connection = new RecordingConnection();
    expect(stream.attach(connection, { after: 2 })).toBe(true);
    expect(numbers(connection.messages())).toEqual([3, 4, 5]);
  });

  it('returns false when the byte limit dropped events after the id', () => {
    const size = JSON.stringify(note(1)).length;
    // Room for two events and a half.
    const { stream } = streamWith({ events: 1_000, bytes: Math.floor(size * 2.5) });
    for (let n = 1; n <= 4; n++) stream.send(note(n));
    expect(stream.attach(new RecordingConnection(), { after: 1 })).toBe(false);
    const connection = new RecordingConnection();
    expect(stream.attach(connection, { after: 2 })).toBe(true);
    expect(numbers(connection.messages())).toEqual([3, 4]);
  });

  it('returns false when other streams\' traffic pushed this stream\'s events out', () => {
    const log = new EventLog({ events: 3, bytes: 1_000_000 });
    const quiet = new SessionStream('standalone', log);
    const busy = new SessionStream('request', log);
    quiet.send(note(1));
    for (let n = 1; n <= 3; n++) busy.send(note(100 + n));
    expect(quiet.attach(new RecordingConnection(), { after: 0 })).toBe(false);
    // Nothing after seq 1 was dropped, so resuming from it is complete (and empty).
    const connection = new RecordingConnection();
    expect(quiet.attach(connection, { after: 1 })).toBe(true);
    expect(connection.messages()).toEqual([]);
  });

  it('leaves the current connection attached and open when it refuses', () => {
    const { stream } = streamWith({ events: 2, bytes: 1_000_000 });
    const current = new RecordingConnection();
    stream.attach(current);
    for (let n = 1; n <= 4; n++) stream.send(note(n));
    const refused = new RecordingConnection();
    expect(stream.attach(refused, { after: 0 })).toBe(false);
    expect(current.closed).toBe(false);
    expect(refused.writes).toEqual([]);
    stream.send(note(5));
    expect(numbers(current.messages())).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('SessionStream connections', () => {
  it('closes the previous connection when a new one attaches, and writes only to the new one', () => {
    const { stream } = streamWith();
    const first = new RecordingConnection();
    const second = new RecordingConnection();
    stream.attach(first);
    stream.attach(second);
    expect(first.closed).toBe(true);
    expect(second.closed).toBe(false);
    stream.send(note(1));
    expect(first.messages()).toEqual([]);
    expect(first.writesAfterClose).toEqual([]);
    expect(numbers(second.messages())).toEqual([1]);
  });

  it('does not close a connection that attaches again', () => {
    const { stream } = streamWith();
    const connection = new RecordingConnection();
    stream.attach(connection);
    stream.attach(connection);
    expect(connection.closed).toBe(false);
    expect(stream.attached).toBe(true);
  });

  it('ignores the detach of a connection that was already replaced', () => {
    const { stream } = streamWith();
    const stale = new RecordingConnection();
    const current = new RecordingConnection();
    stream.attach(stale);
    stream.attach(current);
    stream.detach(stale);
    expect(stream.attached).toBe(true);
    stream.send(note(1));
    expect(numbers(current.messages())).toEqual([1]);
  });

  it('stops writing to a detached connection', () => {
    const { stream } = streamWith();
    const connection = new RecordingConnection();
    stream.attach(connection);
    stream.detach(connection);
    expect(stream.attached).toBe(false);
    stream.send(note(1));
    expect(connection.writes).toEqual([]);
  });
});

describe('SessionStream end of stream', () => {
  it('finish() closes the connection and marks the stream done', () => {
    const { stream } = streamWith();
    const connection = new RecordingConnection();
    stream.attach(connection);
    stream.send(note(1));
    stream.finish();
    expect(connection.closed).toBe(true);
    expect(stream.done).toBe(true);
    expect(stream.attached).toBe(false);
    expect(numbers(connection.messages())).toEqual([1]);
  });

  it('a later attach of a done stream replays what followed the id, then closes at once', () => {
    const { stream } = streamWith();
    const first = new RecordingConnection();
    stream.attach(first);
    stream.send(note(1));
    stream.send(note(2));
    stream.finish();
    const resumed = new RecordingConnection();
    expect(stream.attach(resumed, { after: 1 })).toBe(true);
    expect(numbers(resumed.messages())).toEqual([2]);
    expect(resumed.closed).toBe(true);
    expect(stream.attached).toBe(false);
  });

  it('a done stream delivers what it never wrote on the next attach, then closes', () => {
    const { stream } = streamWith();
    stream.send(note(1));
    stream.finish();
    const connection = new RecordingConnection();
    expect(stream.attach(connection)).toBe(true);
    expect(numbers(connection.messages())).toEqual([1]);
    expect(connection.closed).toBe(true);
  });
});

describe('SessionStream priming and hang-up', () => {
  it('writes the priming event (id, retry, empty data) first when primeRetryMs is given', () => {
    const { stream } = streamWith();
    const connection = new RecordingConnection();
    stream.attach(connection, { primeRetryMs: 3_000 });
    expect(connection.writes).toEqual([`id: ${stream.key}.0\nretry: 3000\ndata: \n\n`]);
    stream.send(note(1));
    expect(connection.ids()).toEqual([`${stream.key}.1`]);
  });

  it('primes a later connection after its replay, with an id no event has used', () => {
    const { stream } = streamWith();
    const first = new RecordingConnection();
    stream.attach(first);
    stream.send(note(1));
    stream.detach(first);
    stream.send(note(2));
    const second = new RecordingConnection();
    stream.attach(second, { primeRetryMs: 500 });
    expect(numbers(second.messages())).toEqual([2]);
    expect(second.writes.at(-1)).toBe(`id: ${stream.key}.3\nretry: 500\ndata: \n\n`);
    // Resuming from that priming id replays only what follows it.
    stream.detach(second);
    stream.send(note(4));
    const third = new RecordingConnection();
    expect(stream.attach(third, { after: 3 })).toBe(true);
    expect(numbers(third.messages())).toEqual([4]);
  });

  it('never issues the same priming id twice', () => {
    const { stream } = streamWith();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const connection = new RecordingConnection();
      stream.attach(connection, { primeRetryMs: 100 });
      ids.push(connection.events()[0]!.id!);
      stream.detach(connection);
    }
    expect(new Set(ids).size).toBe(3);
  });

  it('the priming id is a valid Last-Event-ID that replays everything after it', () => {
    const { stream } = streamWith();
    const first = new RecordingConnection();
    stream.attach(first, { primeRetryMs: 1_000 });
    const primingId = first.events()[0]!.id!;
    stream.send(note(1));
    stream.send(note(2));
    const parsed = parseEventId(primingId);
    expect(parsed).toEqual({ key: stream.key, seq: 0 });
    const resumed = new RecordingConnection();
    expect(stream.attach(resumed, { after: parsed!.seq })).toBe(true);
    expect(numbers(resumed.messages())).toEqual([1, 2]);
  });

  it('hangUp writes a retry hint, closes the connection and leaves the stream resumable', () => {
    const { stream } = streamWith();
    const connection = new RecordingConnection();
    stream.attach(connection);
    stream.send(note(1));
    stream.hangUp(750);
    expect(connection.writes.at(-1)).toBe('retry: 750\n\n');
    expect(connection.closed).toBe(true);
    expect(stream.attached).toBe(false);
    expect(stream.done).toBe(false);
    stream.send(note(2));
    const resumed = new RecordingConnection();
    expect(stream.attach(resumed, { after: 1 })).toBe(true);
    expect(numbers(resumed.messages())).toEqual([2]);
    expect(resumed.closed).toBe(false);
  });

  it('hangUp without a connection does nothing', () => {
    const { stream } = streamWith();
    stream.hangUp(750);
    expect(stream.done).toBe(false);
    const connection = new RecordingConnection();
    stream.attach(connection);
    expect(connection.writes).toEqual([]);
  });
});

describe('parseEventId', () => {
  it('accepts every id a stream issues, priming ids included', () => {
    const { stream } = streamWith();
    const connection = new RecordingConnection();
    stream.attach(connection, { primeRetryMs: 100 });
    for (let n = 1; n <= 12; n++) stream.send(note(n));
    const ids = connection.events().map((e) => e.id!);
    expect(ids).toHaveLength(13);
    expect(ids.map(parseEventId)).toEqual(ids.map((_, seq) => ({ key: stream.key, seq })));
  });

  it('accepts the largest sequence number it can represent exactly', () => {
    expect(parseEventId('0123456789ab.999999999999999')).toEqual({ key: '0123456789ab', seq: 999_999_999_999_999 });
  });

  it.each([
    ['garbage', 'nonsense'],
    ['empty', ''],
    ['a key without a sequence', '0123456789ab'],
    ['a key with an empty sequence', '0123456789ab.'],
    ['a sequence without a key', '.1'],
    ['a key one character short', '0123456789a.1'],
    ['a key one character long', '0123456789abc.1'],
    ['a non-hex key', '0123456789ag.1'],
    ['an upper-case key (streams issue lower case)', '0123456789AB.1'],
    ['a negative sequence', '0123456789ab.-1'],
    ['a fractional sequence', '0123456789ab.1.5'],
    ['a sequence of 16 digits', '0123456789ab.1234567890123456'],
    ['a non-numeric sequence', '0123456789ab.x'],
    ['surrounding spaces', ' 0123456789ab.1 '],
    ['a trailing newline', '0123456789ab.1\n'],
    ['another separator', '0123456789ab:1'],
    ['an extra segment', '0123456789ab.1.2'],
  ])('rejects %s', (_what, value) => {
    expect(parseEventId(value)).toBeUndefined();
  });
});
