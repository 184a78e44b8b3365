// Issue 22's parity runs: a client runs one scenario against server-everything over Streamable
// HTTP directly, then through a Switchyard gateway fronting that same server, and the gateway's
// names and URIs are mapped back to the upstream's so each check asserts the same outcome.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, upstream, type TestGateway } from './gateway.js';
import { startEverythingHttp, type EverythingHttp } from './processes.js';

/** The gateway's name for the one upstream: tools become `everything__echo`, URIs `everything+demo://...`. */
export const PREFIX = 'everything';

/** Where a client connects, and how that side names the upstream's tools, prompts and URIs. */
export interface Side {
  kind: 'direct' | 'switchyard';
  url: URL;
  /** A tool or prompt name as a client says it on this side. */
  name(upstreamName: string): string;
  /** A resource URI as a client says it on this side. */
  uri(upstreamUri: string): string;
  /** A value seen on this side in the upstream's own terms: names and URIs out of the namespace. */
  plain(value: unknown): unknown;
}

export interface Rig {
  remote: EverythingHttp;
  gateway: TestGateway;
  direct: Side;
  switchyard: Side;
  close(): Promise<void>;
}

export function directSide(url: URL): Side {
  return { kind: 'direct', url, name: (n) => n, uri: (u) => u, plain: (v) => v };
}

export function gatewaySide(url: URL, prefix = PREFIX): Side {
  // Only a prefix that starts a string value or a URI scheme is the gateway's; text is data.
  const names = new RegExp(`"${prefix}__`, 'g');
  const uris = new RegExp(`"${prefix}\\+(?=[a-z][a-z0-9+.-]*:)`, 'g');
  return {
    kind: 'switchyard',
    url,
    name: (n) => `${prefix}__${n}`,
    uri: (u) => `${prefix}+${u}`,
    plain: (value) => (value === undefined ? value : JSON.parse(JSON.stringify(value).replace(names, '"').replace(uris, '"'))),
  };
}

/** server-everything over HTTP and a gateway whose only upstream is that server; `config` adds to the gateway's. */
export async function startRig(config: Record<string, unknown> = {}): Promise<Rig> {
  const remote = await startEverythingHttp();
  try {
    const gateway = await startGateway({ upstreams: { [PREFIX]: upstream.http(remote.url) }, ...config }, { logLevel: 'warn' });
    return {
      remote,
      gateway,
      direct: directSide(new URL(remote.url)),
      switchyard: gatewaySide(gateway.url),
      close: async () => {
        await gateway.close();
        await remote.close();
      },
    };
  } catch (err) {
    await remote.close();
    throw err;
  }
}

/** What the upstream asked the client (sampling, elicitation), `_meta` aside: that is the transport's. */
export interface Asked {
  method: string;
  params: unknown;
}

export function asked(method: string, params: unknown): Asked {
  const { _meta: _ignored, ...rest } = (params ?? {}) as Record<string, unknown>;
  return { method, params: rest };
}

/** A canned model answer: it quotes the prompt so a mixed-up request shows. */
export function sampleReply(params: unknown): { model: string; role: 'assistant'; content: { type: 'text'; text: string }; stopReason: string } {
  const first = (params as { messages?: { content?: { text?: string } }[] }).messages?.[0]?.content?.text;
  return { model: 'parity-model', role: 'assistant', content: { type: 'text', text: `sampled: ${first}` }, stopReason: 'endTurn' };
}

/** A canned user answer to server-everything's elicitation form. */
export const ELICIT_REPLY = { action: 'accept' as const, content: { name: 'Ada Lovelace', check: true, integer: 7, email: 'ada@example.com' } };

/** Sampling and elicitation handlers on a v1 SDK client that record into `log` and answer as above. */
export function answerAsV1(client: Client, log: Asked[]): void {
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    log.push(asked(request.method, request.params));
    return sampleReply(request.params);
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    log.push(asked(request.method, request.params));
    return ELICIT_REPLY;
  });
}

/** Whether a call resolved, resolved with `isError`, or threw: which class of error, with its JSON-RPC code if any. */
export async function outcomeOf(call: Promise<unknown>): Promise<unknown> {
  try {
    const result = (await call) as { isError?: boolean } | undefined;
    return { resolved: result?.isError === true ? 'isError result' : 'result' };
  } catch (err) {
    const e = err as { constructor?: { name?: string }; code?: unknown };
    return { rejected: e?.constructor?.name, code: e?.code };
  }
}

/**
 * The one difference a client sees by design: an unknown tool. server-everything (the v1 SDK's
 * McpServer) answers one with an isError result; the gateway answers names it cannot place
 * itself, as the spec's protocol error (server/tools.mdx "Error Handling": unknown tools are
 * -32602), so that a tool hidden by policy and one that does not exist look the same. A failure
 * both ways (README "What is and is not transparent").
 */
export const UNKNOWN_TOOL = "fails an unknown tool: directly with the upstream's isError result, through Switchyard with the spec's -32602";

export function expectUnknownTool(direct: unknown, switchyard: unknown): void {
  expect(direct).toEqual({ resolved: 'isError result' });
  expect(switchyard).toMatchObject({ rejected: expect.any(String), code: -32602 });
}

/** Runs a scenario on both sides (onBothSides' `both`). */
type Both<S> = (scenario: (session: S, side: Side) => Promise<unknown>) => Promise<{ direct: unknown; switchyard: unknown }>;

/**
 * The two failures every client meets: an unknown tool (answered differently by design, above)
 * and arguments that do not fit the schema (an isError result both ways; the message is each
 * side's own, compared by outcome only), for a client whose tool call `caller` gives.
 */
export function itFailsAsDirect<S>(both: Both<S>, caller: (session: S) => Pick<Relaying, 'callTool'>): void {
  it(UNKNOWN_TOOL, async () => {
    const { direct, switchyard } = await both((s, side) => outcomeOf(caller(s).callTool(side.name('no-such-tool'), {})));
    expectUnknownTool(direct, switchyard);
  });

  it('fails invalid arguments the same way', async () => {
    const { direct, switchyard } = await both((s, side) => outcomeOf(caller(s).callTool(side.name('get-sum'), { a: 'nineteen', b: 23 })));
    expect(direct).toEqual({ resolved: 'isError result' });
    expect(switchyard).toEqual(direct);
  });
}

/** The result content of a tool call, as the client returned it. */
export function contentOf(result: unknown): unknown {
  return (result as { content?: unknown }).content;
}

/**
 * Opens a client session on each side before the enclosing describe's tests and closes both
 * after them. `both(scenario)` runs the scenario directly, then through Switchyard, and gives
 * both outcomes in the upstream's terms (and through `neutral`, if given) to compare.
 */
export function onBothSides<S>(rig: () => Rig, open: (side: Side) => Promise<S>, close: (session: S) => Promise<void>, neutral: (value: unknown) => unknown = (value) => value) {
  const sessions = new Map<Side['kind'], S>();

  beforeAll(async () => {
    sessions.set('direct', await open(rig().direct));
    sessions.set('switchyard', await open(rig().switchyard));
  });

  afterAll(async () => {
    await Promise.allSettled([...sessions.values()].map(close));
  });

  const session = (kind: Side['kind']): S => {
    const found = sessions.get(kind);
    if (found === undefined) throw new Error(`no ${kind} session: did it fail to open?`);
    return found;
  };

  return {
    session,
    async both(scenario: (session: S, side: Side) => Promise<unknown>): Promise<{ direct: unknown; switchyard: unknown }> {
      const direct = neutral(await scenario(session('direct'), rig().direct));
      const switchyard = neutral(rig().switchyard.plain(await scenario(session('switchyard'), rig().switchyard)));
      return { direct, switchyard };
    },
  };
}

/** The SDK-shaped calls every MCP SDK client (v1, v2, or v1 behind mcp-remote) offers. */
export interface SdkSession {
  /** The protocol revision the client negotiated. */
  version: string | undefined;
  listTools(): Promise<{ tools: { name: string }[] }>;
  callTool(name: string, args: Record<string, unknown>, onprogress?: (progress: { progress: number; total?: number }) => void): Promise<unknown>;
  getPrompt(name: string, args: Record<string, string>): Promise<unknown>;
  readResource(uri: string): Promise<unknown>;
  /** Every sampling and elicitation request the client's handlers answered. */
  asked: Asked[];
  close(): Promise<void>;
}

export interface SdkParityOptions {
  /** The revision each side must have negotiated. */
  versions?: { direct: string; switchyard: string };
  /** The sides speak different revisions: compare results without what only one revision has (`eraNeutral`). */
  crossEra?: boolean;
  /** Why the client cannot take part in the progress check even directly; the check is skipped. */
  noProgress?: string;
}

/**
 * A result without what 2026-07-28 adds to results (`resultType`, `ttlMs`, `cacheScope`, the
 * reserved `io.modelcontextprotocol/` keys of `_meta`) and without the tools' `execution`,
 * which that revision's Tool no longer has: what a 2025-11-25 and a 2026-07-28 answer share.
 */
export function eraNeutral(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const { resultType: _r, ttlMs: _t, cacheScope: _c, _meta, ...rest } = value as Record<string, unknown>;
  const meta = Object.entries((_meta ?? {}) as Record<string, unknown>).filter(([key]) => !key.startsWith('io.modelcontextprotocol/'));
  if (meta.length > 0) rest._meta = Object.fromEntries(meta);
  if (Array.isArray(rest.tools)) rest.tools = rest.tools.map(({ execution: _e, ...tool }: Record<string, unknown>) => tool);
  return rest;
}

/**
 * The issue-22 scenario for a client with the SDK's shape: `open` connects it (with sampling and
 * elicitation handlers that record into `asked` and answer with `sampleReply` / `ELICIT_REPLY`).
 */
export function describeSdkParity(title: string, rig: () => Rig, open: (side: Side) => Promise<SdkSession>, options: SdkParityOptions = {}): void {
  describe(title, () => {
    const { session, both } = onBothSides(rig, open, (s) => s.close(), options.crossEra ? eraNeutral : undefined);

    if (options.versions) {
      const versions = options.versions;
      it('negotiates the expected protocol revision on each side', () => {
        expect({ direct: session('direct').version, switchyard: session('switchyard').version }).toEqual(versions);
      });
    }

    it('lists the same tools, definitions and all', async () => {
      const { direct, switchyard } = await both(async (s) => {
        const listed = await s.listTools();
        return { ...listed, tools: listed.tools.sort((a, b) => a.name.localeCompare(b.name)) };
      });
      expect((direct as { tools: unknown[] }).tools.length).toBeGreaterThan(10);
      expect(switchyard).toEqual(direct);
    });

    it('echoes the same text', async () => {
      const { direct, switchyard } = await both(async (s, side) => contentOf(await s.callTool(side.name('echo'), { message: 'same both ways' })));
      expect(direct).toEqual([{ type: 'text', text: 'Echo: same both ways' }]);
      expect(switchyard).toEqual(direct);
    });

    it('adds up to the same sum', async () => {
      const { direct, switchyard } = await both(async (s, side) => contentOf(await s.callTool(side.name('get-sum'), { a: 19, b: 23 })));
      expect(JSON.stringify(direct)).toContain('42');
      expect(switchyard).toEqual(direct);
    });

    it('gets the same prompt messages', async () => {
      const { direct, switchyard } = await both((s, side) => s.getPrompt(side.name('args-prompt'), { city: 'Paris', state: 'Texas' }));
      expect(JSON.stringify(direct)).toContain('Paris');
      expect(switchyard).toEqual(direct);
    });

    it('reads the same resource contents, the URI in its namespace', async () => {
      const uri = 'demo://resource/static/document/architecture.md';
      const { direct, switchyard } = await both(async (s, side) => {
        const read = (await s.readResource(side.uri(uri))) as { contents: { uri: string }[] };
        expect(read.contents.map((c) => c.uri)).toEqual([side.uri(uri)]);
        return read;
      });
      expect(switchyard).toEqual(direct);
    });

    if (options.noProgress) {
      it(`runs a long-running operation to the same result (progress not compared: ${options.noProgress})`, async () => {
        const { direct, switchyard } = await both(async (s, side) => contentOf(await s.callTool(side.name('trigger-long-running-operation'), { duration: 0.4, steps: 4 })));
        expect(JSON.stringify(direct)).toContain('completed');
        expect(switchyard).toEqual(direct);
      });
    } else {
      it('reports the same progress for a long-running operation', async () => {
        const { direct, switchyard } = await both(async (s, side) => {
          const progress: { progress: number; total?: number }[] = [];
          const result = await s.callTool(side.name('trigger-long-running-operation'), { duration: 0.4, steps: 4 }, (p) => void progress.push({ progress: p.progress, total: p.total }));
          return { progress, content: contentOf(result) };
        });
        expect((direct as { progress: unknown[] }).progress).toHaveLength(4);
        expect(switchyard).toEqual(direct);
      });
    }

    itFailsAsDirect(both, (session) => session);

    itRelaysAsDirect(both, (session) => session);
  });
}

/** An SdkSession over a connected v1 SDK client (its handlers record into `asked`). */
export function v1Session(client: Client, asked: Asked[], version: string | undefined): SdkSession {
  return {
    version,
    listTools: () => client.listTools(),
    callTool: (name, args, onprogress) => client.callTool({ name, arguments: args }, CallToolResultSchema, onprogress ? { onprogress } : undefined),
    getPrompt: (name, args) => client.getPrompt({ name, arguments: args }),
    readResource: (uri) => client.readResource({ uri }),
    asked,
    close: () => client.close(),
  };
}

/** What the relay checks need of a client: its tool call and the requests its handlers answered. */
interface Relaying {
  callTool(name: string, args: Record<string, unknown>): Promise<unknown>;
  asked: Asked[];
}

/** Sampling and elicitation relayed to a client with handlers, and their answers back to the tool: the same both ways. */
export function itRelaysAsDirect<S>(both: Both<S>, relaying: (session: S) => Relaying): void {
  it('relays a sampling request and returns the same answer to the tool', async () => {
    const { direct, switchyard } = await both(async (session, side) => {
      const s = relaying(session);
      s.asked.length = 0;
      const result = await s.callTool(side.name('trigger-sampling-request'), { prompt: 'Say hi', maxTokens: 17 });
      return { asked: [...s.asked], content: contentOf(result) };
    });
    expect(direct).toMatchObject({ asked: [{ method: 'sampling/createMessage', params: { maxTokens: 17 } }] });
    expect(JSON.stringify(direct)).toContain('sampled: Resource trigger-sampling-request context: Say hi');
    expect(switchyard).toEqual(direct);
  });

  it('relays an elicitation request and returns the same answer to the tool', async () => {
    const { direct, switchyard } = await both(async (session, side) => {
      const s = relaying(session);
      s.asked.length = 0;
      const result = await s.callTool(side.name('trigger-elicitation-request'), {});
      return { asked: [...s.asked], content: contentOf(result) };
    });
    expect(direct).toMatchObject({ asked: [{ method: 'elicitation/create' }] });
    expect(JSON.stringify(direct)).toContain('Ada Lovelace');
    expect(switchyard).toEqual(direct);
  });
}
