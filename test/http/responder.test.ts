// How a POST's requests are answered (src/http/responder.ts): JSON when the answer comes first,
// else a stream of the session. A request whose upstream answers as a stream is answered to a
// client of 2025-11-25 or later as a stream too, opened with its answer (head, priming event,
// answer and end leave together) unless a related message or the request's running time opens it
// sooner.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DownstreamSession } from '../../src/links/session.js';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';
import { JsonReply, type Reply } from '../../src/http/reply.js';
import { respond, STREAM_AFTER_MS, type Answers } from '../../src/http/responder.js';
import { SseConnection } from '../../src/http/sse-connection.js';
import { KeepAlives } from '../../src/http/keep-alives.js';
import { DownstreamSession as Session } from '../../src/session/session.js';
import type { RequestChannel } from '../../src/session/context.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A POST's respond(); `keepAlives`: the shared keep-alive timer, and each stream's response taken at once, as the endpoint does. */
function post(protocolVersion: '2025-06-18' | '2025-11-25' = '2025-11-25', keepAlives?: KeepAlives) {
  const session = new Session('s1', { protocolVersion, clientCapabilities: {}, clientInfo: {} }, Date.now(), { events: 100, bytes: 1_000_000 }) as unknown as DownstreamSession;
  const replies: Reply[] = [];
  let channel!: RequestChannel;
  let done!: (answers: Answers) => void;
  respond(
    session,
    (c, d) => {
      channel = c;
      done = d;
    },
    keepAlives ? { keepAliveMs: keepAlives.everyMs, keepAlives, retryMs: 1_000 } : { keepAliveMs: 0, retryMs: 1_000 },
    (reply) => {
      replies.push(reply);
      if (keepAlives && reply instanceof SseConnection) void reply.response;
    },
    [1],
  );
  return { replies, channel, done };
}

async function body(reply: Reply | undefined): Promise<string> {
  expect(reply).toBeInstanceOf(SseConnection);
  return new Response((reply as SseConnection).response.body).text();
}

const answer: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: { content: [] } };
const progress: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } };

describe('respond', () => {
  it('answers as a stream when told the upstream streams, opening it only with the answer', async () => {
    const { replies, channel, done } = post();
    channel.stream!();
    expect(replies).toEqual([]);
    done(answer as Answers);
    expect(replies).toHaveLength(1);
    const text = await body(replies[0]);
    expect(text).toMatch(/^id: ([0-9a-f]{12})\.0\nretry: 1000\ndata: \n\nid: \1\.1\nevent: message\ndata: /);
    expect(text).toContain(JSON.stringify(answer));
  });

  it('answers a client older than 2025-11-25 JSON when told the upstream streams and the answer comes first', () => {
    // The stream would be one event whose id arrives with it: a client that missed it has no id to resume from.
    const { replies, channel, done } = post('2025-06-18');
    channel.stream!();
    done(answer as Answers);
    expect(replies).toHaveLength(1);
    expect(replies[0]).toBeInstanceOf(JsonReply);
  });

  it('keeps a stream opened with its answer out of the keep-alive timer, which a stream opened sooner joins', async () => {
    const keepAlives = new KeepAlives(10_000);
    const add = vi.spyOn(keepAlives, 'add');
    const whole = post('2025-11-25', keepAlives);
    whole.channel.stream!();
    whole.done(answer as Answers);
    // It ends in the tick it opens: a keep-alive is never due, and the timer was not started for it.
    expect(add).not.toHaveBeenCalled();
    expect(await body(whole.replies[0])).toContain(JSON.stringify(answer));

    const sooner = post('2025-11-25', keepAlives);
    sooner.channel.send(progress);
    expect(add).toHaveBeenCalledTimes(1);
    expect(keepAlives.size).toBe(1);
    sooner.done(answer as Answers);
    await body(sooner.replies[0]);
    expect(keepAlives.size).toBe(0);
  });

  it('opens the stream at once for a related message, told to stream or not', async () => {
    const { replies, channel, done } = post();
    channel.stream!();
    channel.send(progress);
    expect(replies).toHaveLength(1);
    done(answer as Answers);
    expect(replies).toHaveLength(1);
    const text = await body(replies[0]);
    expect(text.indexOf('notifications/progress')).toBeLessThan(text.indexOf('"result"'));
  });

  it('opens the stream after STREAM_AFTER_MS for a request still running', async () => {
    vi.useFakeTimers();
    const { replies, channel, done } = post('2025-06-18');
    channel.stream!();
    vi.advanceTimersByTime(STREAM_AFTER_MS - 1);
    expect(replies).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(replies).toHaveLength(1);
    done(answer as Answers);
    vi.useRealTimers();
    // No priming event for a 2025-06-18 client: the answer is the first event.
    expect(await body(replies[0])).toMatch(/^id: [0-9a-f]{12}\.1\nevent: message\ndata: /);
  });

  it('answers JSON when nothing asked for a stream', () => {
    const { replies, done } = post();
    done(answer as Answers);
    expect(replies).toHaveLength(1);
    expect(replies[0]).toBeInstanceOf(JsonReply);
  });

  it('opens no stream for a cancelled request, told to stream or not: an empty answer ends it', async () => {
    const { replies, channel, done } = post();
    channel.stream!();
    done(undefined);
    expect(replies).toHaveLength(1);
    expect(replies[0]).not.toBeInstanceOf(SseConnection);
    expect(await (replies[0] as Response).text()).toBe('');
  });
});
