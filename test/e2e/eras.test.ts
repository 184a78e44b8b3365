// Both protocol eras through one endpoint: sessions-era clients (the v1 SDK) and 2026-07-28
// clients (the v2 SDK), against a sessions-era upstream (server-everything over stdio) and a
// 2026-07-28 upstream (the v2 server SDK over HTTP). Every pairing runs a tool, a call with
// progress, a cancelled call and an elicitation round trip.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, recordNotifications, startGateway, textOf, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { poll } from '../helpers/cli.js';
import { scrape } from '../helpers/metrics.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { startEverythingHttp, stopChild, waitForLine } from '../helpers/processes.js';

let modernUpstream: ChildProcessWithoutNullStreams;
let gw: TestGateway;

beforeAll(async () => {
  modernUpstream = spawn(NODE, [join(FIXTURES, 'modern-server.mjs')], { stdio: 'pipe' });
  const [, url] = await waitForLine(modernUpstream, /listening on (\S+)/);
  gw = await startGateway({
    upstreams: { everything: upstream.everything(), modern: upstream.http(url!), local: { stdio: { command: NODE, args: [join(FIXTURES, 'modern-server.mjs'), 'stdio'] } } },
    metrics: { enabled: true },
  });
});

afterAll(async () => {
  await gw?.close();
  if (modernUpstream) await stopChild(modernUpstream);
});

/** What both clients offer a test: one call shape, whatever the era. */
interface AnyClient {
  era: 'sessions' | '2026-07-28';
  call(name: string, args: Record<string, unknown>, options?: { signal?: AbortSignal; onprogress?: (p: { progress: number }) => void }): Promise<unknown>;
  elicited: string[];
  close(): Promise<void>;
}

async function sessionsClient(): Promise<AnyClient> {
  const elicited: string[] = [];
  const client: Client = await connectClient(gw.url, { elicitation: {} }, (c) =>
    c.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicited.push(String(request.params.message));
      return { action: 'accept', content: { name: 'Ada', username: 'ada' } };
    }),
  );
  return {
    era: 'sessions',
    elicited,
    call: (name, args, options) => client.callTool({ name, arguments: args }, CallToolResultSchema, options),
    close: () => client.close(),
  };
}

async function modernClient(): Promise<AnyClient> {
  const elicited: string[] = [];
  const client = new ModernClient({ name: 'modern-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler('elicitation/create', async (request) => {
    elicited.push(String((request.params as { message?: unknown }).message));
    return { action: 'accept', content: { name: 'Ada', username: 'ada' } };
  });
  await client.connect(new ModernTransport(gw.url));
  expect(client.getProtocolEra()).toBe('modern');
  return {
    era: '2026-07-28',
    elicited,
    call: (name, args, options) => client.callTool({ name, arguments: args }, options),
    close: () => client.close(),
  };
}

/** Client-caused cancellations sent to `upstream`, from the gateway's /metrics. */
async function cancellations(upstream: string): Promise<number> {
  return (await scrape(new URL('/metrics', gw.url))).get(`switchyard_cancellations_total{upstream="${upstream}",cause="client"}`) ?? 0;
}

/** What each pairing calls on each upstream. */
const tools = {
  everything: {
    echo: ['everything__echo', { message: 'hi there' }],
    progress: ['everything__trigger-long-running-operation', { duration: 0.3, steps: 3 }],
    slow: ['everything__trigger-long-running-operation', { duration: 30, steps: 30 }],
    ask: ['everything__trigger-elicitation-request', {}],
  },
  modern: {
    echo: ['modern__echo', { message: 'hi there' }],
    progress: ['modern__progress', { steps: 3 }],
    slow: ['modern__slow', {}],
    ask: ['modern__ask', {}],
  },
} as const;

const clients = { 'sessions-era client': sessionsClient, '2026-07-28 client': modernClient };
const pairings = Object.entries(clients).flatMap(([clientName, open]) => (['everything', 'modern'] as const).map((server) => ({ clientName, open, server })));

describe('a 2026-07-28 upstream', () => {
  it.each(Object.entries(clients))('is called statelessly with the %s\'s own info and capabilities in _meta', async (_name, open) => {
    const client = await open();
    try {
      // The fixture refuses sessions-era requests and checks Mcp-Name against the body, so the
      // call succeeding shows the headers carried the upstream's own tool name.
      const envelope = JSON.parse(textOf(await client.call('modern__whoami', {}))) as Record<string, unknown>;
      expect(envelope).toMatchObject({
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: client.era === 'sessions' ? 'switchyard-test' : 'modern-test' },
        'io.modelcontextprotocol/clientCapabilities': { elicitation: expect.any(Object) },
      });
    } finally {
      await client.close();
    }
  });
});

describe('a dual-era upstream over stdio (it answers server/discover and initialize)', () => {
  it.each(Object.entries(clients))('meets the %s in its own era, input requests included', async (_name, open) => {
    const client = await open();
    try {
      const envelope = JSON.parse(textOf(await client.call('local__whoami', {}))) as Record<string, unknown> | null;
      // A sessions-era client's upstream session was initialized (no per-request envelope); a
      // 2026-07-28 client's requests went statelessly, with its own _meta.
      if (client.era === 'sessions') expect(envelope).toBeNull();
      else expect(envelope).toMatchObject({ 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'modern-test' } });
      expect(JSON.stringify(await client.call('local__ask', {}))).toContain('hello Ada');
      expect(client.elicited).toEqual(['What is your name?']);
    } finally {
      await client.close();
    }
  });

  it('hears a cancellation as notifications/cancelled', async () => {
    const client = await sessionsClient();
    try {
      const controller = new AbortController();
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      const call = client.call('local__slow', {}, { signal: controller.signal, onprogress: () => started() });
      await running;
      controller.abort();
      await expect(call).rejects.toThrow();
      // A sessions-era client has its own stdio child: its count starts at zero.
      await until(async () => textOf(await client.call('local__cancelled', {})) === '1', 'the child to see the cancellation');
    } finally {
      await client.close();
    }
  });
});

describe.each(pairings)('$clientName → $server upstream', ({ open, server }) => {
  const names = tools[server];

  it('calls a tool', async () => {
    const client = await open();
    try {
      const result = await client.call(names.echo[0], { ...names.echo[1] });
      expect(textOf(result)).toContain('hi there');
    } finally {
      await client.close();
    }
  });

  it('delivers progress to the caller, in order, before the result', async () => {
    const client = await open();
    try {
      const seen: number[] = [];
      const result = await client.call(names.progress[0], { ...names.progress[1] }, { onprogress: (p) => void seen.push(p.progress) });
      expect(result).toMatchObject({ content: expect.any(Array) });
      expect(seen.length).toBeGreaterThanOrEqual(1);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
    } finally {
      await client.close();
    }
  });

  it('cancels the call upstream and stays usable', async () => {
    const client = await open();
    try {
      const before = await cancellations(server);
      const controller = new AbortController();
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      // Both upstreams report progress once the call runs.
      const call = client.call(names.slow[0], { ...names.slow[1] }, { signal: controller.signal, onprogress: () => started() });
      await running;
      controller.abort();
      await expect(call).rejects.toThrow();
      await until(async () => (await cancellations(server)) > before, 'the upstream cancellation');
      if (server === 'modern') await until(async () => textOf(await client.call('modern__cancelled', {})) !== '0', 'the upstream to see the cancellation');
      expect(textOf(await client.call(names.echo[0], { ...names.echo[1] }))).toContain('hi there');
    } finally {
      await client.close();
    }
  });

  it('relays an elicitation round trip and returns its answer to the tool', async () => {
    const client = await open();
    try {
      const result = await client.call(names.ask[0], { ...names.ask[1] });
      expect(client.elicited).toHaveLength(1);
      expect(JSON.stringify(result)).toContain('Ada');
    } finally {
      await client.close();
    }
  });
});

/** Polls until `probe` holds (bounded). */
async function until(probe: () => Promise<boolean>, what: string): Promise<void> {
  await poll(async () => ((await probe()) ? true : undefined), what);
}

describe('an upstream replaced by one of the other era', () => {
  it('is probed again once a connection on the remembered era fails', async () => {
    const legacy = await startEverythingHttp();
    let modern: ChildProcessWithoutNullStreams | undefined;
    const local = await startGateway({ upstreams: { swap: upstream.http(legacy.url) } });
    try {
      const first = await connectClient(local.url);
      expect(textOf(await first.callTool({ name: 'swap__echo', arguments: { message: 'sessions era' } }))).toContain('sessions era');
      await first.close();
      await legacy.close();
      modern = spawn(NODE, [join(FIXTURES, 'modern-server.mjs')], { stdio: 'pipe', env: { ...process.env, PORT: new URL(legacy.url).port } });
      await waitForLine(modern, /listening on/);
      // The remembered era sends initialize, which the stateless-only server refuses: that session
      // goes without it, and the failure makes the next connection probe.
      const second = await connectClient(local.url);
      await expect(second.callTool({ name: 'swap__echo', arguments: { message: 'x' } })).rejects.toThrow();
      await second.close();
      const third = await connectClient(local.url);
      expect(textOf(await third.callTool({ name: 'swap__echo', arguments: { message: 'stateless era' } }))).toBe('stateless era');
      await third.close();
    } finally {
      await local.close();
      await legacy.close();
      if (modern) await stopChild(modern);
    }
  });
});

describe('a 2026-07-28 upstream that breaks the rules', () => {
  it('gets a clear error for input asked where none may be, or input_required with nothing to answer; the rest goes on', async () => {
    const odd = spawn(NODE, [join(FIXTURES, 'odd-modern.mjs')], { stdio: 'pipe' });
    try {
      const [, url] = await waitForLine(odd, /listening on (\S+)/);
      const local = await startGateway({ upstreams: { odd: upstream.http(url!), everything: upstream.everything() } });
      try {
        const client = await connectClient(local.url, { roots: {} });
        try {
          // Its list is left out of the merged one; everything's stays.
          const { tools } = await client.listTools();
          expect(tools.some((t) => t.name === 'everything__echo')).toBe(true);
          expect(tools.some((t) => t.name.startsWith('odd__'))).toBe(false);
          await expect(client.callTool({ name: 'odd__broken', arguments: {} })).rejects.toThrow(/neither inputRequests nor requestState/);
          expect(textOf(await client.callTool({ name: 'odd__fine', arguments: {} }))).toBe('fine');
        } finally {
          await client.close();
        }
      } finally {
        await local.close();
      }
    } finally {
      await stopChild(odd);
    }
  });
});

describe('bridging what the eras do differently', () => {
  it('gives a sessions-era client the log lines of a 2026-07-28 upstream at the level it set', async () => {
    let notes!: NotificationLog;
    const client = await connectClient(gw.url, {}, (c) => (notes = recordNotifications(c)));
    try {
      await client.setLoggingLevel('info');
      await client.callTool({ name: 'modern__log', arguments: { data: 'hello from the stateless side' } });
      const line = await notes.waitFor((n) => n.method === 'notifications/message', 'the log line');
      expect(line.params).toMatchObject({ level: 'info', data: 'hello from the stateless side', logger: 'modern/fixture' });
      await client.setLoggingLevel('error');
      const before = notes.all.length;
      await client.callTool({ name: 'modern__log', arguments: { data: 'below the level' } });
      expect(textOf(await client.callTool({ name: 'modern__echo', arguments: { message: 'after' } }))).toBe('after');
      expect(notes.all.slice(before).filter((n) => n.method === 'notifications/message')).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('tells a sessions-era client when a 2026-07-28 upstream\'s tools or subscribed resources change', async () => {
    let notes!: NotificationLog;
    const client = await connectClient(gw.url, {}, (c) => (notes = recordNotifications(c)));
    try {
      await client.callTool({ name: 'modern__change-tools', arguments: {} });
      await notes.waitFor((n) => n.method === 'notifications/tools/list_changed', 'tools list_changed from the upstream\'s listen stream');
      await client.subscribeResource({ uri: 'modern+fixture://note' });
      // The subscription reaches the upstream as a new listen filter; touch until it is heard.
      await poll(async () => {
        await client.callTool({ name: 'modern__touch-note', arguments: {} });
        return notes.all.find((n) => n.method === 'notifications/resources/updated') ? true : undefined;
      }, 'the resource update');
      expect(notes.all.find((n) => n.method === 'notifications/resources/updated')!.params).toEqual({ uri: 'modern+fixture://note' });
    } finally {
      await client.close();
    }
  });

  it('tells a 2026-07-28 client listening for tool changes when a 2026-07-28 upstream\'s tools change', async () => {
    const client = new ModernClient({ name: 'modern-listener', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const changes: unknown[] = [];
    client.setNotificationHandler('notifications/tools/list_changed', (n) => void changes.push(n));
    await client.connect(new ModernTransport(gw.url));
    try {
      const subscription = await client.listen({ toolsListChanged: true });
      expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });
      // The gateway's own listen stream to the upstream opens with the session; announce until heard.
      await poll(async () => {
        await client.callTool({ name: 'modern__change-tools', arguments: {} });
        return changes.length > 0 ? true : undefined;
      }, 'tools list_changed');
      await subscription.close();
    } finally {
      await client.close();
    }
  });

  it('turns a round asking for sampling and roots into requests to a sessions-era client, and back', async () => {
    const asked: string[] = [];
    const client = await connectClient(gw.url, { sampling: {}, roots: {} }, (c) => {
      c.setRequestHandler(CreateMessageRequestSchema, async () => {
        asked.push('sampling/createMessage');
        return { model: 'test', role: 'assistant', content: { type: 'text', text: 'hi from the client' } };
      });
      c.setRequestHandler(ListRootsRequestSchema, async () => {
        asked.push('roots/list');
        return { roots: [{ uri: 'file:///work' }] };
      });
    });
    try {
      const result = await client.callTool({ name: 'modern__sample-and-roots', arguments: {} });
      expect(textOf(result)).toBe('model said hi from the client; roots file:///work');
      expect(asked.sort()).toEqual(['roots/list', 'sampling/createMessage']);
    } finally {
      await client.close();
    }
  });

  it('gives a 2026-07-28 client that round\'s sampling and roots requests as its own input_required', async () => {
    const client = new ModernClient({ name: 'modern-sampler', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { sampling: {}, roots: {} } });
    const asked: string[] = [];
    client.setRequestHandler('sampling/createMessage', async () => {
      asked.push('sampling/createMessage');
      return { model: 'test', role: 'assistant', content: { type: 'text', text: 'hi from v2' } };
    });
    client.setRequestHandler('roots/list', async () => {
      asked.push('roots/list');
      return { roots: [{ uri: 'file:///v2' }] };
    });
    await client.connect(new ModernTransport(gw.url));
    try {
      const result = await client.callTool({ name: 'modern__sample-and-roots', arguments: {} });
      expect(textOf(result)).toBe('model said hi from v2; roots file:///v2');
      expect(asked.sort()).toEqual(['roots/list', 'sampling/createMessage']);
    } finally {
      await client.close();
    }
  });

  it('gives up on an upstream that asks for input without end, with an error naming it', async () => {
    const client = await sessionsClient();
    try {
      await expect(client.call('modern__ask-forever', {})).rejects.toThrow(/asked for input 16 times/);
      expect(client.elicited).toHaveLength(16);
      expect(textOf(await client.call('modern__echo', { message: 'still here' }))).toBe('still here');
    } finally {
      await client.close();
    }
  });
});
