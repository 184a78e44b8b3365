// The SSE parser and encoders of src/util/sse.ts: line endings, chunk boundaries, fields, limits.
import { describe, expect, it } from 'vitest';
import { encodeSseComment, encodeSseEvent, encodeSseRetry, SseParser, type SseEvent } from '../../src/util/sse.js';

const utf8 = new TextEncoder();

/** Feeds every chunk to one parser and returns all the events it produced, in order. */
function parseAll(chunks: readonly (string | Uint8Array)[], parser = new SseParser()): SseEvent[] {
  return chunks.flatMap((chunk) => parser.push(chunk));
}

describe('SseParser line endings', () => {
  it('splits events on LF line ends', () => {
    expect(parseAll(['data: one\n\ndata: two\n\n'])).toEqual([
      { event: 'message', data: 'one' },
      { event: 'message', data: 'two' },
    ]);
  });

  it('splits events on CRLF line ends', () => {
    expect(parseAll(['data: one\r\n\r\ndata: two\r\n\r\n'])).toEqual([
      { event: 'message', data: 'one' },
      { event: 'message', data: 'two' },
    ]);
  });

  it('splits events on bare CR line ends', () => {
    expect(parseAll(['data: one\r\rdata: two\r\r'])).toEqual([
      { event: 'message', data: 'one' },
      { event: 'message', data: 'two' },
    ]);
  });

  it('splits on LF, CRLF and bare CR mixed in one chunk, in the order they come', () => {
    expect(parseAll(['data: a\rdata: b\n\r\nid: 7\r\ndata: c\r\r', 'event: x\ndata: d\n\n'])).toEqual([
      { event: 'message', data: 'a\nb' },
      { event: 'message', data: 'c', id: '7' },
      { event: 'x', data: 'd' },
    ]);
  });

  it('a CRLF split across two chunks is one line end, not an extra empty line', () => {
    // Were the LF read as a second line end, "a" would go out on its own before "b" arrived.
    expect(parseAll(['data: a\r', '\ndata: b\r', '\n\r', '\n'])).toEqual([{ event: 'message', data: 'a\nb' }]);
  });

  it('a CRLF split across two byte chunks is one line end', () => {
    expect(parseAll([utf8.encode('data: a\r'), utf8.encode('\ndata: b\r\n\r'), utf8.encode('\n')])).toEqual([
      { event: 'message', data: 'a\nb' },
    ]);
  });

  it('an empty chunk between the CR and the LF of a CRLF does not make the LF a second line end', () => {
    // Streams can yield empty chunks; the pending CR must survive them.
    expect(parseAll([utf8.encode('data: a\r'), new Uint8Array(0), utf8.encode('\ndata: b\n\n')])).toEqual([
      { event: 'message', data: 'a\nb' },
    ]);
  });

  it('a CR at the end of a chunk followed by a chunk not starting with LF ends the line', () => {
    expect(parseAll(['data: a\r', 'data: b\r', '\r'])).toEqual([{ event: 'message', data: 'a\nb' }]);
  });

  it('holds a line without its line end until the end arrives', () => {
    const parser = new SseParser();
    expect(parser.push('data: hel')).toEqual([]);
    expect(parser.push('lo\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ event: 'message', data: 'hello' }]);
  });
});

describe('SseParser fields', () => {
  it('joins multi-line data with "\\n"', () => {
    expect(parseAll(['data: first\ndata: second\ndata: third\n\n'])).toEqual([
      { event: 'message', data: 'first\nsecond\nthird' },
    ]);
  });

  it('strips exactly one space after the colon', () => {
    expect(parseAll(['data:no-space\ndata:  two-spaces\n\n'])).toEqual([{ event: 'message', data: 'no-space\n two-spaces' }]);
  });

  it('a "data" line without a colon adds an empty data line', () => {
    expect(parseAll(['data\ndata: x\n\n'])).toEqual([{ event: 'message', data: '\nx' }]);
  });

  it('names the event from the "event" field', () => {
    expect(parseAll(['event: endpoint\ndata: /messages?session=1\n\n'])).toEqual([
      { event: 'endpoint', data: '/messages?session=1' },
    ]);
  });

  it('names an event "message" when the stream names none', () => {
    expect(parseAll(['data: x\n\n'])[0]?.event).toBe('message');
  });

  it('does not carry an event name over to the next event', () => {
    expect(parseAll(['event: ping\ndata: 1\n\ndata: 2\n\n']).map((e) => e.event)).toEqual(['ping', 'message']);
  });

  it('gives an event the id sent with it', () => {
    expect(parseAll(['id: 42\ndata: x\n\n'])).toEqual([{ event: 'message', data: 'x', id: '42' }]);
  });

  it('keeps lastEventId across events that carry no id', () => {
    const parser = new SseParser();
    const events = parseAll(['id: 7\ndata: a\n\n', 'data: b\n\n'], parser);
    expect(events).toEqual([
      { event: 'message', data: 'a', id: '7' },
      { event: 'message', data: 'b' },
    ]);
    expect(parser.lastEventId).toBe('7');
  });

  it('updates lastEventId to the newest id', () => {
    const parser = new SseParser();
    parseAll(['id: 1\ndata: a\n\nid: 2\ndata: b\n\n'], parser);
    expect(parser.lastEventId).toBe('2');
  });

  it('leaves lastEventId undefined before any id arrives', () => {
    const parser = new SseParser();
    parseAll(['data: a\n\n'], parser);
    expect(parser.lastEventId).toBeUndefined();
  });

  it('ignores an id that contains NUL', () => {
    const parser = new SseParser();
    const events = parseAll(['id: 1\ndata: a\n\nid: b\0d\ndata: b\n\n'], parser);
    expect(events[1]).toEqual({ event: 'message', data: 'b' });
    expect(parser.lastEventId).toBe('1');
  });

  it('returns an id-only priming event with empty data', () => {
    const parser = new SseParser();
    expect(parseAll(['id: prime-1\n\n'], parser)).toEqual([{ event: 'message', data: '', id: 'prime-1' }]);
    expect(parser.lastEventId).toBe('prime-1');
  });

  it('parses "retry" as milliseconds', () => {
    expect(parseAll(['retry: 3000\ndata: x\n\n'])).toEqual([{ event: 'message', data: 'x', retry: 3000 }]);
  });

  it('returns a retry-only event', () => {
    expect(parseAll([encodeSseRetry(1500)])).toEqual([{ event: 'message', data: '', retry: 1500 }]);
  });

  it('ignores a "retry" that is not all digits', () => {
    expect(parseAll(['retry: 10s\ndata: x\n\nretry: -5\ndata: y\n\n'])).toEqual([
      { event: 'message', data: 'x' },
      { event: 'message', data: 'y' },
    ]);
  });

  it('ignores comment lines', () => {
    expect(parseAll([': keep-alive\ndata: a\n: between\ndata: b\n\n'])).toEqual([{ event: 'message', data: 'a\nb' }]);
  });

  it('a comment alone dispatches nothing', () => {
    expect(parseAll([encodeSseComment('ping')])).toEqual([]);
  });

  it('ignores unknown fields', () => {
    expect(parseAll(['foo: bar\ndata: x\n\n'])).toEqual([{ event: 'message', data: 'x' }]);
  });

  it('a blank line with nothing before it dispatches nothing', () => {
    expect(parseAll(['\n\n\r\n'])).toEqual([]);
  });
});

describe('SseParser bytes', () => {
  it('decodes a multibyte UTF-8 character split across byte chunks', () => {
    const bytes = utf8.encode('data: h\u00e9llo \u{1F600}\n\n');
    const emoji = bytes.indexOf(0xf0);
    const eAcute = bytes.indexOf(0xc3);
    // Cut inside é (2 bytes) and twice inside the 4-byte emoji.
    const cuts = [eAcute + 1, emoji + 1, emoji + 3];
    const chunks = [0, ...cuts].map((from, i) => bytes.subarray(from, cuts[i] ?? bytes.length));
    expect(parseAll(chunks)).toEqual([{ event: 'message', data: 'h\u00e9llo \u{1F600}' }]);
  });

  it('drops a byte order mark at the start of the stream, split across chunks or not, and keeps one later', () => {
    // The spec's stream is UTF-8 decoded, which removes a leading BOM; read as part of the
    // first line it would hide that line's field name.
    const bytes = utf8.encode('\uFEFFdata: a\n\ndata: \uFEFFb\n\n');
    expect(parseAll([bytes])).toEqual([
      { event: 'message', data: 'a' },
      { event: 'message', data: '\uFEFFb' },
    ]);
    expect(parseAll([bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)])).toEqual([
      { event: 'message', data: 'a' },
      { event: 'message', data: '\uFEFFb' },
    ]);
  });
});

describe('SseParser size limit', () => {
  it('raises when a line without its end grows past maxLine', () => {
    const parser = new SseParser(16);
    expect(() => parser.push(`data: ${'x'.repeat(32)}`)).toThrow(/size limit/);
  });

  it('raises when a line grows past maxLine over several chunks', () => {
    const parser = new SseParser(16);
    parser.push('data: 0123');
    expect(() => parser.push('456789abcdef')).toThrow(/size limit/);
  });

  it('raises for a line past maxLine even when its end arrives in the same chunk', () => {
    // The contract: "a line longer than `maxLine` raises". Today only the unterminated tail of a
    // chunk is measured, so a long line completed by the chunk that finishes it goes through.
    const parser = new SseParser(16);
    parser.push('data: 0123456789');
    expect(() => parser.push('abcdefghij\n\n')).toThrow(/size limit/);
  });

  it('accepts lines up to maxLine', () => {
    const parser = new SseParser(16);
    expect(parseAll(['data: 0123456789', '\n\n'], parser)).toEqual([{ event: 'message', data: '0123456789' }]);
  });
});

describe('SSE encoders', () => {
  it('encodeSseEvent output parses back to the same data', () => {
    const data = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: 'caf\u00e9: a\\nb' } });
    expect(parseAll([encodeSseEvent(data)])).toEqual([{ event: 'message', data }]);
  });

  it('encodeSseEvent output parses back to the same data and id', () => {
    const data = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress' });
    const parser = new SseParser();
    expect(parseAll([encodeSseEvent(data, 'stream-1:17')], parser)).toEqual([{ event: 'message', data, id: 'stream-1:17' }]);
    expect(parser.lastEventId).toBe('stream-1:17');
  });

  it('encodeSseEvent keeps a leading space of the data', () => {
    expect(parseAll([encodeSseEvent(' padded')])).toEqual([{ event: 'message', data: ' padded' }]);
  });

  it('encodeSseComment writes a comment line and a blank line', () => {
    expect(encodeSseComment('keep-alive')).toBe(': keep-alive\n\n');
  });

  it('encodeSseRetry writes a retry field and a blank line', () => {
    expect(encodeSseRetry(2000)).toBe('retry: 2000\n\n');
  });
});
