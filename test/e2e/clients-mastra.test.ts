// Issue 35 item 6 with Mastra's MCP client (@mastra/mcp 2.0.0, `MCPClient`, protocol auto): it
// runs one scenario against server-everything directly and through Switchyard and gets the same
// outcome. Directly the server speaks only the sessions era (the client falls back to
// 2025-11-25); through Switchyard it negotiates 2026-07-28 (server/discover), and its Mastra tool
// set (`listTools()`, what an agent is given) holds every tool `listToolDefinitions()` shows.
import { MCPClient } from '@mastra/mcp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ELICIT_REPLY, onBothSides, startRig, type Asked, type Rig, type Side } from '../helpers/parity.js';

let rig: Rig;

beforeAll(async () => {
  rig = await startRig();
});

afterAll(async () => {
  await rig?.close();
});

/** The one server of each side's MCPClient. */
const SERVER = 'everything';

interface MastraSession {
  mcp: MCPClient;
  side: Side;
  asked: Asked[];
}

async function open(side: Side): Promise<MastraSession> {
  const asked: Asked[] = [];
  const mcp = new MCPClient({
    id: `parity-${side.kind}`,
    timeout: 20_000,
    servers: {
      [SERVER]: {
        url: side.url,
        // Mastra answers input requests (elicitation) through this handler only.
        inputRequests: async ({ params }) => {
          asked.push({ method: 'elicitation/create', params: params as Record<string, unknown> });
          return ELICIT_REPLY;
        },
      },
    },
  });
  return { mcp, side, asked };
}

/** A Mastra tool id of this side's tool `name` (Mastra prefixes the server's name). */
const toolId = (s: MastraSession, name: string) => `${SERVER}_${s.side.name(name)}`;

async function execute(s: MastraSession, name: string, args: Record<string, unknown>): Promise<unknown> {
  const tool = (await s.mcp.listTools())[toolId(s, name)];
  if (!tool?.execute) throw new Error(`no Mastra tool ${toolId(s, name)}`);
  return tool.execute(args as never, {} as never);
}

describe('Mastra MCPClient', () => {
  const { session, both } = onBothSides(() => rig, open, (s) => s.mcp.disconnect());

  it('negotiates 2025-11-25 directly and 2026-07-28 through Switchyard', async () => {
    const negotiated = async (s: MastraSession) => {
      await s.mcp.listToolDefinitions();
      // The negotiated revision is the connected client's; MCPClient keeps one per server.
      const internal = s.mcp as unknown as { getConnectedClientForServer(name: string): Promise<{ negotiatedProtocolVersion?: string }> };
      return (await internal.getConnectedClientForServer(SERVER)).negotiatedProtocolVersion;
    };
    expect({ direct: await negotiated(session('direct')), switchyard: await negotiated(session('switchyard')) }).toEqual({ direct: '2025-11-25', switchyard: '2026-07-28' });
  });

  it('builds a tool set with every tool its definitions show, the same both ways', async () => {
    const { direct, switchyard } = await both(async (s) => {
      const { tools, errors } = await s.mcp.listToolsWithErrors();
      const definitions = await s.mcp.listToolDefinitions();
      return {
        errors,
        tools: Object.entries(tools)
          .map(([id, tool]) => ({ id: id.replace(`${SERVER}_`, ''), description: tool.description }))
          .sort((a, b) => a.id.localeCompare(b.id)),
        definitions: Object.keys(definitions[SERVER] ?? {}).sort(),
      };
    });
    const shown = direct as { tools: { id: string }[]; definitions: string[] };
    expect(shown.tools.length).toBeGreaterThan(10);
    expect(shown.tools.map((t) => t.id)).toEqual(shown.definitions);
    expect(switchyard).toEqual(direct);
  });

  it('executes echo and get-sum to the same content', async () => {
    const { direct, switchyard } = await both(async (s) => ({
      echo: ((await execute(s, 'echo', { message: 'same both ways' })) as { content: unknown }).content,
      sum: ((await execute(s, 'get-sum', { a: 19, b: 23 })) as { content: unknown }).content,
    }));
    expect(direct).toMatchObject({ echo: [{ type: 'text', text: 'Echo: same both ways' }] });
    expect(JSON.stringify(direct)).toContain('42');
    expect(switchyard).toEqual(direct);
  });

  it('gets the same prompt and reads the same resource', async () => {
    const { direct, switchyard } = await both(async (s) => {
      const prompt = await s.mcp.prompts.get({ serverName: SERVER, name: s.side.name('args-prompt'), args: { city: 'Paris', state: 'Texas' } });
      const read = await s.mcp.resources.read(SERVER, s.side.uri('demo://resource/static/document/architecture.md'));
      return { messages: prompt.messages, contents: read.contents };
    });
    expect(JSON.stringify(direct)).toContain('Paris');
    expect(switchyard).toEqual(direct);
  });

  it('answers an elicitation through its inputRequests handler and the tool gets the same answer', async () => {
    const { direct, switchyard } = await both(async (s) => {
      s.asked.length = 0;
      const result = (await execute(s, 'trigger-elicitation-request', {})) as { content: unknown };
      return { asked: s.asked.map((a) => a.method), content: result.content };
    });
    expect(direct).toMatchObject({ asked: ['elicitation/create'] });
    expect(JSON.stringify(direct)).toContain('Ada Lovelace');
    expect(switchyard).toEqual(direct);
  });

  it('runs a long-running operation to the same result', async () => {
    const { direct, switchyard } = await both(async (s) => ((await execute(s, 'trigger-long-running-operation', { duration: 0.4, steps: 4 })) as { content: unknown }).content);
    expect(JSON.stringify(direct)).toContain('completed');
    expect(switchyard).toEqual(direct);
  });
});
