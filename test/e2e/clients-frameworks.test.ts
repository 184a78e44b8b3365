// Issue 22 with the agent frameworks' MCP clients: Vercel's AI SDK (@ai-sdk/mcp, its HTTP
// transport and its AI SDK tool set) and LangChain's adapters (@langchain/mcp-adapters,
// MultiServerMCPClient and its LangChain tools) each run one scenario against server-everything
// directly and through Switchyard, and get the same outcome.
import { createMCPClient, ElicitationRequestSchema, type MCPClient } from '@ai-sdk/mcp';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import type { DynamicStructuredTool } from '@langchain/core/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asked, contentOf, ELICIT_REPLY, expectUnknownTool, onBothSides, outcomeOf, startRig, UNKNOWN_TOOL, type Asked, type Rig, type Side } from '../helpers/parity.js';

let rig: Rig;

beforeAll(async () => {
  rig = await startRig();
});

afterAll(async () => {
  await rig?.close();
});

const STATIC_DOC = 'demo://resource/static/document/architecture.md';

describe('AI SDK MCP client', () => {
  interface AiSdkSession {
    client: MCPClient;
    asked: Asked[];
  }

  async function open(side: Side): Promise<AiSdkSession> {
    const log: Asked[] = [];
    // This client answers elicitation only (it has no sampling handler).
    const client = await createMCPClient({ transport: { type: 'http', url: side.url.href }, clientName: 'switchyard-parity', capabilities: { elicitation: {} } });
    client.onElicitationRequest(ElicitationRequestSchema, async (request) => {
      log.push(asked(request.method, request.params));
      return ELICIT_REPLY;
    });
    return { client, asked: log };
  }

  const { both } = onBothSides(() => rig, open, (s) => s.client.close());

  /** Runs a tool the way an AI SDK agent does: the tool set's `execute`. */
  async function execute(s: AiSdkSession, name: string, args: Record<string, unknown>): Promise<unknown> {
    const tool = (await s.client.tools())[name];
    if (!tool) throw new Error(`no tool ${name} in the AI SDK tool set`);
    return tool.execute!(args, { toolCallId: 'call-1', messages: [] });
  }

  it('builds the same AI SDK tool set', async () => {
    const { direct, switchyard } = await both(async (s) => {
      const tools = await s.client.tools();
      return Object.entries(tools)
        .map(([name, tool]) => ({ name, description: tool.description, title: tool.title, inputSchema: (tool.inputSchema as { jsonSchema: unknown }).jsonSchema }))
        .sort((a, b) => a.name.localeCompare(b.name));
    });
    expect((direct as unknown[]).length).toBeGreaterThan(10);
    expect(switchyard).toEqual(direct);
  });

  it('executes echo to the same text', async () => {
    const { direct, switchyard } = await both(async (s, side) => contentOf(await execute(s, side.name('echo'), { message: 'same both ways' })));
    expect(direct).toEqual([{ type: 'text', text: 'Echo: same both ways' }]);
    expect(switchyard).toEqual(direct);
  });

  it('executes get-sum to the same sum', async () => {
    const { direct, switchyard } = await both(async (s, side) => contentOf(await execute(s, side.name('get-sum'), { a: 19, b: 23 })));
    expect(JSON.stringify(direct)).toContain('42');
    expect(switchyard).toEqual(direct);
  });

  it('gets the same prompt messages', async () => {
    const { direct, switchyard } = await both((s, side) => s.client.experimental_getPrompt({ name: side.name('args-prompt'), arguments: { city: 'Paris', state: 'Texas' } }));
    expect(JSON.stringify(direct)).toContain('Paris');
    expect(switchyard).toEqual(direct);
  });

  it('reads the same resource contents, the URI in its namespace', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      const read = await s.client.readResource({ uri: side.uri(STATIC_DOC) });
      expect(read.contents.map((c) => c.uri)).toEqual([side.uri(STATIC_DOC)]);
      return read;
    });
    expect(switchyard).toEqual(direct);
  });

  // This client sends no progress token and takes no progress callback: only the result is compared.
  it('runs a long-running operation to the same result', async () => {
    const { direct, switchyard } = await both(async (s, side) => contentOf(await execute(s, side.name('trigger-long-running-operation'), { duration: 0.2, steps: 2 })));
    expect(JSON.stringify(direct)).toContain('completed');
    expect(switchyard).toEqual(direct);
  });

  it(UNKNOWN_TOOL, async () => {
    // The tool set is built from tools/list; a definition the server never listed makes a tool for a name it does not know.
    const { direct, switchyard } = await both(async (s, side) => {
      const name = side.name('no-such-tool');
      const tools = s.client.toolsFromDefinitions({ tools: [{ name, inputSchema: { type: 'object', properties: {} } }] });
      return outcomeOf(Promise.resolve(tools[name]!.execute!({}, { toolCallId: 'call-1', messages: [] })));
    });
    expectUnknownTool(direct, switchyard);
  });

  it('fails invalid arguments the same way', async () => {
    const { direct, switchyard } = await both((s, side) => outcomeOf(execute(s, side.name('get-sum'), { a: 'nineteen', b: 23 })));
    expect(switchyard).toEqual(direct);
  });

  it('relays an elicitation request and returns the same answer to the tool', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      s.asked.length = 0;
      const result = await execute(s, side.name('trigger-elicitation-request'), {});
      return { asked: [...s.asked], content: contentOf(result) };
    });
    expect(direct).toMatchObject({ asked: [{ method: 'elicitation/create' }] });
    expect(JSON.stringify(direct)).toContain('Ada Lovelace');
    expect(switchyard).toEqual(direct);
  });
});

describe('LangChain MCP adapters', () => {
  interface LangChainSession {
    client: MultiServerMCPClient;
    tools: DynamicStructuredTool[];
    progress: { progress: number; total?: number }[];
  }

  async function open(side: Side): Promise<LangChainSession> {
    const progress: LangChainSession['progress'] = [];
    const client = new MultiServerMCPClient({
      mcpServers: { parity: { transport: 'http', url: side.url.href, automaticSSEFallback: false } },
      onProgress: (p) => void progress.push({ progress: p.progress, total: p.total }),
    });
    try {
      return { client, tools: await client.getTools(), progress };
    } catch (err) {
      await client.close();
      throw err;
    }
  }

  const { both } = onBothSides(() => rig, open, (s) => s.client.close());

  function tool(s: LangChainSession, name: string): DynamicStructuredTool {
    const found = s.tools.find((t) => t.name === name);
    if (!found) throw new Error(`no LangChain tool ${name}`);
    return found;
  }

  it('loads the same LangChain tools', async () => {
    const { direct, switchyard } = await both(async (s) =>
      s.tools.map((t) => ({ name: t.name, description: t.description, schema: t.schema, metadata: t.metadata })).sort((a, b) => a.name.localeCompare(b.name)),
    );
    expect((direct as unknown[]).length).toBeGreaterThan(10);
    expect(switchyard).toEqual(direct);
  });

  it('invokes echo to the same text', async () => {
    const { direct, switchyard } = await both((s, side) => tool(s, side.name('echo')).invoke({ message: 'same both ways' }));
    expect(direct).toBe('Echo: same both ways');
    expect(switchyard).toEqual(direct);
  });

  it('invokes get-sum as a tool call to the same tool message', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      const message = await tool(s, side.name('get-sum')).invoke({ type: 'tool_call', id: 'call-1', name: side.name('get-sum'), args: { a: 19, b: 23 } });
      return { content: message.content, artifact: message.artifact, status: message.status };
    });
    expect(JSON.stringify(direct)).toContain('42');
    expect(switchyard).toEqual(direct);
  });

  // The adapters turn tools into LangChain tools and nothing else: prompts come from the MCP client they hold.
  it('gets the same prompt messages', async () => {
    const { direct, switchyard } = await both(async (s, side) => (await s.client.getClient('parity'))!.getPrompt({ name: side.name('args-prompt'), arguments: { city: 'Paris', state: 'Texas' } }));
    expect(JSON.stringify(direct)).toContain('Paris');
    expect(switchyard).toEqual(direct);
  });

  it('reads the same resource contents, the URI in its namespace', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      const contents = await s.client.readResource('parity', side.uri(STATIC_DOC));
      expect(contents.map((c) => c.uri)).toEqual([side.uri(STATIC_DOC)]);
      return contents;
    });
    expect(switchyard).toEqual(direct);
  });

  it('reports the same progress for a long-running operation', async () => {
    const { direct, switchyard } = await both(async (s, side) => {
      s.progress.length = 0;
      const result = await tool(s, side.name('trigger-long-running-operation')).invoke({ duration: 0.4, steps: 4 });
      return { progress: [...s.progress], result };
    });
    expect((direct as { progress: unknown[] }).progress).toHaveLength(4);
    expect(switchyard).toEqual(direct);
  });

  // An unknown tool cannot be invoked: the adapters make tools only from what tools/list returned.

  it('fails invalid arguments the same way', async () => {
    const { direct, switchyard } = await both((s, side) => outcomeOf(tool(s, side.name('get-sum')).invoke({ a: 'nineteen', b: 23 } as never)));
    expect(direct).toMatchObject({ rejected: 'ToolInputParsingException' });
    expect(switchyard).toEqual(direct);
  });
});
