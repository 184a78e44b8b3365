// Issue 22 with two agent frameworks' MCP clients: the OpenAI Agents SDK (MCPServerStreamableHttp
// and the function tools an agent gets from it) and mcp-use (MCPClient and its sessions) each run
// one scenario against server-everything directly and through Switchyard, and get the same
// outcome. No model is called; neither framework's tracing or telemetry may leave loopback.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { getAllMcpTools, MCPServerStreamableHttp, RunContext, setTracingDisabled, type FunctionTool } from '@openai/agents';
import { MCPClient, type MCPSession } from 'mcp-use/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asked, contentOf, ELICIT_REPLY, eraNeutral, itFailsAsDirect, itRelaysAsDirect, onBothSides, sampleReply, startRig, type Asked, type Rig, type Side } from '../helpers/parity.js';

// mcp-use reads this when its first client is built (Telemetry.getInstance); the Agents SDK's
// exporter only sends traces that tracing made, and tracing is off.
process.env.MCP_USE_ANONYMIZED_TELEMETRY = 'false';
setTracingDisabled(true);

const STATIC_DOC = 'demo://resource/static/document/architecture.md';

/** Every host this process connected to or fetched from, so the file can show it stayed on loopback. */
const reached = new Set<string>();
const onSocket = (message: unknown): void => {
  const socket = (message as { socket: Socket }).socket;
  socket.once('lookup', (_err: unknown, _address: unknown, _family: unknown, host: string) => reached.add(host));
  socket.once('connect', () => reached.add(socket.remoteAddress ?? '?'));
};
const onFetch = (message: unknown): void => void reached.add(new URL((message as { request: { origin: string } }).request.origin).hostname);

let rig: Rig;

beforeAll(async () => {
  subscribe('net.client.socket', onSocket);
  subscribe('undici:request:create', onFetch);
  rig = await startRig();
});

afterAll(async () => {
  await rig?.close();
  unsubscribe('net.client.socket', onSocket);
  unsubscribe('undici:request:create', onFetch);
});

describe('OpenAI Agents SDK MCP client', () => {
  /** Its v2 SDK client negotiates `auto`: 2025-11-25 with server-everything, 2026-07-28 with Switchyard. */
  async function open(side: Side): Promise<MCPServerStreamableHttp> {
    const server = new MCPServerStreamableHttp({ url: side.url.href, name: `parity-${side.kind}`, cacheToolsList: false });
    await server.connect();
    return server;
  }

  const { session, both } = onBothSides(() => rig, open, (s) => s.close(), eraNeutral);

  it('negotiates 2025-11-25 directly and 2026-07-28 through Switchyard', () => {
    // The SDK keeps its v2 client private; only its negotiated revision is read here.
    type Internals = { underlying: { session: { getNegotiatedProtocolVersion(): string | undefined } } };
    const version = (s: MCPServerStreamableHttp) => (s as unknown as Internals).underlying.session.getNegotiatedProtocolVersion();
    expect({ direct: version(session('direct')), switchyard: version(session('switchyard')) }).toEqual({ direct: '2025-11-25', switchyard: '2026-07-28' });
  });

  it('lists the same tools, definitions and all', async () => {
    const { direct, switchyard } = await both(async (s) => ({ tools: (await s.listTools()).sort((a, b) => a.name.localeCompare(b.name)) }));
    expect((direct as { tools: unknown[] }).tools.length).toBeGreaterThan(10);
    expect(switchyard).toEqual(direct);
  });

  it('gives an agent the same function tools', async () => {
    const { direct, switchyard } = await both(async (s) => {
      const tools = (await getAllMcpTools({ mcpServers: [s], convertSchemasToStrict: false })) as FunctionTool[];
      return tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, strict: t.strict })).sort((a, b) => a.name.localeCompare(b.name));
    });
    expect((direct as unknown[]).length).toBeGreaterThan(10);
    expect(switchyard).toEqual(direct);
  });

  it('echoes the same text', async () => {
    const { direct, switchyard } = await both((s, side) => s.callTool(side.name('echo'), { message: 'same both ways' }));
    expect(direct).toEqual([{ type: 'text', text: 'Echo: same both ways' }]);
    expect(switchyard).toEqual(direct);
  });

  it('adds up to the same sum, as the function tool an agent invokes', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      const tools = (await getAllMcpTools({ mcpServers: [s], convertSchemasToStrict: false })) as FunctionTool[];
      // A function tool's name is the MCP name with every character outside [a-zA-Z0-9] made `_`.
      const name = side.name('get-sum').replace(/[^a-zA-Z0-9]/g, '_');
      const sum = tools.find((t) => t.name === name);
      if (!sum) throw new Error(`no function tool ${name}`);
      return sum.invoke(new RunContext(), JSON.stringify({ a: 19, b: 23 }));
    });
    expect(JSON.stringify(direct)).toContain('42');
    expect(switchyard).toEqual(direct);
  });

  it('reads the same resource contents, the URI in its namespace', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      const read = await s.readResource(side.uri(STATIC_DOC));
      expect(read.contents.map((c) => c.uri)).toEqual([side.uri(STATIC_DOC)]);
      return read;
    });
    expect(switchyard).toEqual(direct);
  });

  it('lists the same resources and templates', async () => {
    const { direct, switchyard } = await both(async (s) => ({ ...(await s.listResources()), ...(await s.listResourceTemplates()) }));
    expect(direct).toMatchObject({ resources: expect.arrayContaining([expect.anything()]), resourceTemplates: expect.arrayContaining([expect.anything()]) });
    expect(switchyard).toEqual(direct);
  });

  itFailsAsDirect(both, (s) => s);
});

describe('mcp-use MCPClient', () => {
  interface McpUseSession {
    client: MCPClient;
    session: MCPSession;
    /** What the server asked through the client's sampling and elicitation callbacks. */
    asked: Asked[];
  }

  async function open(side: Side): Promise<McpUseSession> {
    const log: Asked[] = [];
    // disableSseFallback: a failure must show, not turn into a legacy HTTP+SSE session.
    const client = new MCPClient(
      { mcpServers: { parity: { url: side.url.href, disableSseFallback: true } } },
      {
        onSampling: async (params) => {
          log.push(asked('sampling/createMessage', params));
          return sampleReply(params);
        },
        onElicitation: async (params) => {
          log.push(asked('elicitation/create', params));
          return ELICIT_REPLY;
        },
      },
    );
    try {
      return { client, session: await client.createSession('parity'), asked: log };
    } catch (err) {
      await client.closeAllSessions();
      throw err;
    }
  }

  const { both } = onBothSides(() => rig, open, (s) => s.client.closeAllSessions());

  it('lists the same tools, definitions and all', async () => {
    const { direct, switchyard } = await both(async (s) => (await s.session.listTools()).sort((a, b) => a.name.localeCompare(b.name)));
    expect((direct as unknown[]).length).toBeGreaterThan(10);
    expect(switchyard).toEqual(direct);
  });

  it('echoes the same text', async () => {
    const { direct, switchyard } = await both(async (s, side) => contentOf(await s.session.callTool(side.name('echo'), { message: 'same both ways' })));
    expect(direct).toEqual([{ type: 'text', text: 'Echo: same both ways' }]);
    expect(switchyard).toEqual(direct);
  });

  it('adds up to the same sum', async () => {
    const { direct, switchyard } = await both(async (s, side) => contentOf(await s.session.callTool(side.name('get-sum'), { a: 19, b: 23 })));
    expect(JSON.stringify(direct)).toContain('42');
    expect(switchyard).toEqual(direct);
  });

  it('gets the same prompt messages', async () => {
    const { direct, switchyard } = await both((s, side) => s.session.getPrompt(side.name('args-prompt'), { city: 'Paris', state: 'Texas' }));
    expect(JSON.stringify(direct)).toContain('Paris');
    expect(switchyard).toEqual(direct);
  });

  it('lists the same prompts', async () => {
    const { direct, switchyard } = await both((s) => s.session.listPrompts());
    expect(JSON.stringify(direct)).toContain('args-prompt');
    expect(switchyard).toEqual(direct);
  });

  it('reads the same resource contents, the URI in its namespace', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      const read = await s.session.readResource(side.uri(STATIC_DOC));
      expect(read.contents.map((c) => c.uri)).toEqual([side.uri(STATIC_DOC)]);
      return read;
    });
    expect(switchyard).toEqual(direct);
  });

  it('lists the same resources and templates', async () => {
    const { direct, switchyard } = await both(async (s) => ({ ...(await s.session.listAllResources()), ...(await s.session.listResourceTemplates()) }));
    expect(direct).toMatchObject({ resources: expect.arrayContaining([expect.anything()]), resourceTemplates: expect.arrayContaining([expect.anything()]) });
    expect(switchyard).toEqual(direct);
  });

  it('completes a prompt argument the same way', async () => {
    const { direct, switchyard } = await both((s, side) => s.session.complete({ ref: { type: 'ref/prompt', name: side.name('completable-prompt') }, argument: { name: 'department', value: 'En' } }));
    expect(JSON.stringify(direct)).toContain('Engineering');
    expect(switchyard).toEqual(direct);
  });

  it('reports the same progress for a long-running operation', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      const progress: { progress: number; total?: number }[] = [];
      const result = await s.session.callTool(side.name('trigger-long-running-operation'), { duration: 0.4, steps: 4 }, { onprogress: (p) => void progress.push({ progress: p.progress, total: p.total }) });
      return { progress, content: contentOf(result) };
    });
    expect((direct as { progress: unknown[] }).progress).toHaveLength(4);
    expect(switchyard).toEqual(direct);
  });

  itFailsAsDirect(both, (s) => ({ callTool: (name, args) => s.session.callTool(name, args) }));

  itRelaysAsDirect(both, (s) => ({ callTool: (name, args) => s.session.callTool(name, args), asked: s.asked }));
});

describe('the frameworks on the network', () => {
  it('reached nothing beyond loopback (no tracing, no telemetry)', () => {
    expect(reached.size).toBeGreaterThan(0);
    expect([...reached].filter((host) => !/^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1|localhost)$/.test(host))).toEqual([]);
  });
});
