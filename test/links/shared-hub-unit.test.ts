// A shared stdio child's unasked messages (links/shared.ts): what belongs to one session's task
// reaches that session only. The extension's `notifications/tasks` carries a task's result, and
// `notifications/subscriptions/acknowledged` answers one session's listen: both reach the listen
// they name (the child's client hands over its request's context) and no session the child serves.
// After the child restarts, its subscriptions are renewed a few at a time, not all at once.
import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage, JsonRpcNotification } from '../../src/mcp/jsonrpc.js';
import type { DownstreamSession } from '../../src/links/session.js';
import { SharedHub } from '../../src/links/shared.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { NamespaceCodec } from '../../src/names/namespace.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { silentLogger } from '../../src/util/log.js';

interface Heard {
  session: DownstreamSession;
  delivered: JsonRpcNotification[];
  followed: JsonRpcNotification[];
}

/** A session that records what it is delivered, and what a follower of `task` hears. */
function session(task?: string): Heard {
  const delivered: JsonRpcNotification[] = [];
  const followed: JsonRpcNotification[] = [];
  const taskFollowers = new Map<string, Set<(message: JsonRpcNotification) => void>>();
  if (task) taskFollowers.set(task, new Set([(message) => void followed.push(message)]));
  const fake = { access: { canSee: () => true }, taskFollowers, deliver: (message: JsonRpcNotification) => void delivered.push(message) };
  return { session: fake as unknown as DownstreamSession, delivered, followed };
}

const codec = new NamespaceCodec({ separator: '__', maxNameLength: 64 }, [{ upstream: 'kid', prefix: 'kid' }]);
/** The task as the gateway names it to its clients (and as a listen follows it). */
const EXPOSED = codec.exposeTaskId('kid', 'task-1');

/** `listen`: the context of the gateway's listen request the child's notification names, if any. */
function hub(): { hub: SharedHub; hear: (message: JsonRpcNotification, listen?: unknown) => void } {
  const client = { name: 'kid', request: async () => ({}) } as unknown as UpstreamClient & { onnotification: (message: JsonRpcNotification, context: unknown) => void };
  const shared = new SharedHub(client, { naming: { codec }, metrics: new Metrics(['kid']), logger: silentLogger });
  return { hub: shared, hear: (message, listen) => client.onnotification(message, listen) };
}

/** The context of a listen request of the gateway's: what reaches its stream. */
function listening(): { context: unknown; heard: JsonRpcMessage[] } {
  const heard: JsonRpcMessage[] = [];
  return { context: { channel: { send: (message: JsonRpcMessage) => void heard.push(message) } }, heard };
}

describe("a shared child's task notifications", () => {
  it("a 2025-11-25 task's status reaches its own session only: its followers and its client", () => {
    const { hub: shared, hear } = hub();
    const a = session(EXPOSED);
    const b = session(EXPOSED);
    shared.add(a.session);
    shared.add(b.session);
    shared.ownTask('task-1', a.session);
    hear({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { taskId: 'task-1', status: 'working' } });
    expect(b.delivered).toEqual([]);
    expect(b.followed).toEqual([]);
    expect(a.delivered.map((m) => m.params?.taskId)).toEqual([EXPOSED]);
    expect(a.followed.map((m) => m.method)).toEqual(['notifications/tasks/status']);
  });

  it("the extension's acknowledgement and notifications/tasks reach the listen they name alone; naming none, nobody", () => {
    const { hub: shared, hear } = hub();
    const a = session(EXPOSED);
    const b = session(EXPOSED);
    shared.add(a.session);
    shared.add(b.session);
    const mine = listening();
    const ack: JsonRpcNotification = { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: ['task-1'] } } };
    const tasks: JsonRpcNotification = { jsonrpc: '2.0', method: 'notifications/tasks', params: { taskId: 'task-1', status: 'completed', result: { content: [{ type: 'text', text: 'A SECRET' }] } } };
    hear(ack, mine.context);
    hear(tasks, mine.context);
    hear(ack);
    hear(tasks);
    expect(mine.heard).toEqual([
      { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [EXPOSED] } } },
      { jsonrpc: '2.0', method: 'notifications/tasks', params: { ...tasks.params, taskId: EXPOSED } },
    ]);
    for (const other of [a, b]) {
      expect(other.delivered).toEqual([]);
      expect(other.followed).toEqual([]);
    }
  });

  it('still reach every session when they are the whole catalog\'s (list_changed)', () => {
    const { hub: shared, hear } = hub();
    const a = session();
    const b = session();
    shared.add(a.session);
    shared.add(b.session);
    hear({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    expect(a.delivered).toHaveLength(1);
    expect(b.delivered).toHaveLength(1);
  });
});

describe("a shared child's restart", () => {
  it('renews the subscriptions held for its sessions at most 16 at once, then tells every session its lists may differ', async () => {
    let inFlight = 0;
    let most = 0;
    const renewed: string[] = [];
    const waiting: (() => void)[] = [];
    // Before the restart the child subscribes at once; the restarted one waits until the test answers.
    let restarted = false;
    const fakeChild = {
      name: 'kid',
      onreconnect: () => {},
      request: (_method: string, params: { uri: string }): Promise<unknown> => {
        if (!restarted) return Promise.resolve({});
        most = Math.max(most, ++inFlight);
        return new Promise((resolve) =>
          waiting.push(() => {
            inFlight--;
            renewed.push(params.uri);
            resolve({});
          }),
        );
      },
    };
    const client = fakeChild as unknown as UpstreamClient;
    const shared = new SharedHub(client, { naming: { codec }, metrics: new Metrics(['kid']), logger: silentLogger });
    let told!: () => void;
    const listsChanged = new Promise<void>((resolve) => (told = resolve));
    const fake = { access: { canSee: () => true }, taskFollowers: new Map(), deliver: () => told() } as unknown as DownstreamSession;
    shared.add(fake);
    for (let i = 0; i < 200; i++) await shared.subscribe(fake, `file:///x/${i}`, {});
    restarted = true;
    fakeChild.onreconnect();
    let done = false;
    void listsChanged.then(() => (done = true));
    while (!done) {
      for (const answer of waiting.splice(0)) answer();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(renewed.sort()).toEqual(Array.from({ length: 200 }, (_, i) => `file:///x/${i}`).sort());
    expect(most).toBeLessThanOrEqual(16);
  });
});
