// Helpers for the per-team policy tests: whole lists followed through their cursors, errors
// as the client got them, "does this answer exactly like an unknown name", upstream session
// counts, and calling every listed item harmlessly to prove that a team can use it.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';
import { poll } from './cli.js';
import { journal, textOf } from './gateway.js';

/** Bounds every wait for something that should happen soon. */
const PROMPT_MS = 10_000;

export interface Names {
  tools: string[];
  prompts: string[];
  resources: string[];
  templates: string[];
}

export const sorted = (names: readonly string[]): string[] => [...names].sort();
export const without = (names: readonly string[], hidden: readonly string[]): string[] => names.filter((n) => !hidden.includes(n));
export const named = (prefix: string, names: readonly string[]): string[] => names.filter((n) => n.startsWith(prefix));


const MAX_PAGES = 50;

/** Every page of every list, followed through nextCursor (bounded). */
export async function listAll(client: Client): Promise<{ tools: Record<string, unknown>[]; prompts: Record<string, unknown>[]; resources: string[]; templates: string[] }> {
  const pages = async <T>(read: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>): Promise<T[]> => {
    const items: T[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await read(cursor);
      items.push(...result.items);
      cursor = result.nextCursor;
      if (cursor === undefined) return items;
    }
    throw new Error(`more than ${MAX_PAGES} pages`);
  };
  const params = (cursor: string | undefined) => (cursor === undefined ? undefined : { cursor });
  const tools = await pages(async (c) => {
    const r = await client.listTools(params(c));
    return { items: r.tools as Record<string, unknown>[], nextCursor: r.nextCursor };
  });
  const prompts = await pages(async (c) => {
    const r = await client.listPrompts(params(c));
    return { items: r.prompts as Record<string, unknown>[], nextCursor: r.nextCursor };
  });
  const resources = await pages(async (c) => {
    const r = await client.listResources(params(c));
    return { items: r.resources.map((x) => x.uri), nextCursor: r.nextCursor };
  });
  const templates = await pages(async (c) => {
    const r = await client.listResourceTemplates(params(c));
    return { items: r.resourceTemplates.map((x) => x.uriTemplate), nextCursor: r.nextCursor };
  });
  return { tools, prompts, resources, templates };
}

export async function namesOf(client: Client): Promise<Names> {
  const all = await listAll(client);
  return { tools: all.tools.map((t) => String(t.name)), prompts: all.prompts.map((p) => String(p.name)), resources: all.resources, templates: all.templates };
}

/** Full name sets, order aside (a duplicate still fails). */
export function expectNames(actual: Names, expected: Names): void {
  expect({ tools: sorted(actual.tools), prompts: sorted(actual.prompts), resources: sorted(actual.resources), templates: sorted(actual.templates) }).toEqual({
    tools: sorted(expected.tools),
    prompts: sorted(expected.prompts),
    resources: sorted(expected.resources),
    templates: sorted(expected.templates),
  });
}

/** A JSON-RPC error as the client got it (the SDK's "MCP error <code>: " prefix removed once). */
export interface RpcFailure {
  code: number;
  message: string;
  data?: unknown;
}

export async function failureOf(pending: Promise<unknown>): Promise<RpcFailure | 'answered'> {
  try {
    await pending;
    return 'answered';
  } catch (err) {
    if (!(err instanceof McpError)) throw err;
    const failure: RpcFailure = { code: err.code, message: err.message.replace(/^MCP error -?\d+: /, '') };
    if (err.data !== undefined) failure.data = err.data;
    return failure;
  }
}

export type Attempt = 'tool' | 'prompt' | 'resource' | 'subscribe' | 'complete-prompt' | 'complete-resource';

export function attempt(client: Client, kind: Attempt, name: string): Promise<unknown> {
  const argument = { name: 'id', value: '1' };
  switch (kind) {
    case 'tool':
      return client.callTool({ name, arguments: {} });
    case 'prompt':
      return client.getPrompt({ name });
    case 'resource':
      return client.readResource({ uri: name });
    case 'subscribe':
      return client.subscribeResource({ uri: name });
    case 'complete-prompt':
      return client.complete({ ref: { type: 'ref/prompt', name }, argument });
    case 'complete-resource':
      return client.complete({ ref: { type: 'ref/resource', uri: name }, argument });
  }
}

const NOUN: Record<Attempt, string> = { tool: 'tool', prompt: 'prompt', resource: 'resource', subscribe: 'resource', 'complete-prompt': 'prompt', 'complete-resource': 'resource' };

/** The answer a name that does not exist gets: -32602 and `Unknown <kind>: <the name sent>` (a resource's with its uri in data). */
export const unknownAnswer = (kind: Attempt, name: string): RpcFailure =>
  NOUN[kind] === 'resource' ? { code: -32602, message: `Unknown resource: ${name}`, data: { uri: name } } : { code: -32602, message: `Unknown ${NOUN[kind]}: ${name}` };

/** Every name among `names` whose answer is not exactly the unknown-name answer, with what it got. */
export async function notAnsweredAsUnknown(client: Client, kind: Attempt, names: readonly string[]): Promise<{ name: string; got: RpcFailure | 'answered' }[]> {
  const wrong: { name: string; got: RpcFailure | 'answered' }[] = [];
  for (const name of names) {
    const got = await failureOf(attempt(client, kind, name));
    if (!isDeepStrictEqual(got, unknownAnswer(kind, name))) wrong.push({ name, got });
  }
  return wrong;
}


/** Open upstream sessions per upstream, as /healthz counts them. */
export async function upstreamSessions(gw: { url: URL }): Promise<Record<string, number>> {
  const body = (await (await fetch(new URL('/healthz', gw.url))).json()) as { upstreams: Record<string, { sessions: number }> };
  return Object.fromEntries(Object.entries(body.upstreams).map(([name, h]) => [name, h.sessions]));
}

export function delta(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((name) => [name, after[name]! - (before[name] ?? 0)]));
}


// How each listed tool is called so that it answers at once and harmlessly.
const PAGED_ARGS = (tool: string): Record<string, unknown> => (tool === 'paged__sleep' ? { ms: 1 } : { message: 'probe' });
const ROGUE_ARGS: Record<string, Record<string, unknown>> = {
  rogue__slow: { ms: 1 },
  rogue__progress: { count: 1, intervalMs: 1 },
  rogue__journal: {},
  rogue__ask: { method: 'ping' },
  rogue__notify: { method: 'notifications/message', params: { level: 'debug', data: 'probe' } },
  rogue__garbage: {},
  'rogue__unknown-id': {},
  rogue__stderr: { text: 'probe' },
  rogue__pid: {},
};
const EVERYTHING_ARGS: Record<string, Record<string, unknown>> = {
  everything__echo: { message: 'probe' },
  'everything__get-annotated-message': { messageType: 'success' },
  'everything__get-env': {},
  'everything__get-resource-links': { count: 1 },
  'everything__get-resource-reference': { resourceType: 'Text', resourceId: 1 },
  'everything__get-structured-content': { location: 'Chicago' },
  'everything__get-sum': { a: 1, b: 2 },
  'everything__get-tiny-image': {},
  'everything__gzip-file-as-resource': { name: 'probe.gz', data: 'data:text/plain;base64,aGk=', outputType: 'resource' },
  'everything__toggle-simulated-logging': {},
  'everything__toggle-subscriber-updates': {},
  'everything__trigger-long-running-operation': { duration: 0.05, steps: 1 },
  'everything__simulate-research-query': { topic: 'probe' },
};
/** Tools whose upstream itself refuses a plain call: its own isError answer proves the call reached it. */
const UPSTREAM_REFUSAL: Record<string, RegExp> = { 'everything__simulate-research-query': /requires task augmentation/ };
const PROMPT_ARGS: Record<string, string> = { topic: 'probe', department: 'Engineering', name: 'Alice', city: 'Paris', state: 'WA', resourceType: 'Text', resourceId: '1' };

/**
 * Calls every listed tool and reports any that did not run. rogue's `huge` never answers (it
 * is cancelled once rogue's journal shows it arrived) and `crash` kills the child (the crash
 * error proves it arrived), so they go last.
 */
export async function toolsThatDidNotRun(client: Client, tools: readonly string[]): Promise<{ tool: string; got: unknown }[]> {
  const failed: { tool: string; got: unknown }[] = [];
  const last = ['rogue__huge', 'rogue__crash'];
  for (const tool of [...tools.filter((t) => !last.includes(t)), ...tools.filter((t) => last.includes(t))]) {
    if (tool === 'rogue__huge') {
      const controller = new AbortController();
      const pending = client.callTool({ name: tool, arguments: { bytes: 8 } }, undefined, { signal: controller.signal });
      const outcome = pending.then(() => 'answered', (err: unknown) => err);
      await poll(async () => ((await journal(client, 'rogue__journal')).some((m) => m.method === 'tools/call' && m.params?.name === 'huge') ? true : undefined), 'rogue to receive huge', PROMPT_MS);
      controller.abort();
      await outcome;
      continue;
    }
    if (tool === 'rogue__fail') {
      // It answers the error it is asked for: that error is the proof it ran.
      const got = await failureOf(client.callTool({ name: tool, arguments: { code: -32603, message: 'failed on purpose' } }));
      if (got === 'answered' || got.code !== -32603 || got.message !== 'failed on purpose') failed.push({ tool, got });
      continue;
    }
    if (tool === 'rogue__crash') {
      const got = await failureOf(client.callTool({ name: tool, arguments: {} }));
      if (got === 'answered' || got.code !== -32000 || !got.message.startsWith('upstream rogue crashed')) failed.push({ tool, got });
      continue;
    }
    const args = tool.startsWith('paged__') || tool === 'pay_echo' ? PAGED_ARGS(tool) : (ROGUE_ARGS[tool] ?? EVERYTHING_ARGS[tool]);
    if (!args) {
      failed.push({ tool, got: 'no arguments known for this tool' });
      continue;
    }
    try {
      // A plain tools/call, as any client may send it (the SDK would refuse a task-only tool itself).
      const result = await client.request({ method: 'tools/call', params: { name: tool, arguments: args } }, CallToolResultSchema);
      const refusal = UPSTREAM_REFUSAL[tool];
      if (result.isError === true && !(refusal && refusal.test(textOf(result)))) failed.push({ tool, got: result });
    } catch (err) {
      failed.push({ tool, got: err instanceof McpError ? { code: err.code, message: err.message } : String(err) });
    }
  }
  return failed;
}

/** Gets every listed prompt (arguments filled) and reads every listed resource and one instance of each template. */
export async function itemsThatDidNotAnswer(client: Client): Promise<{ item: string; got: unknown }[]> {
  const failed: { item: string; got: unknown }[] = [];
  const { prompts, resources, templates } = await listAll(client);
  for (const prompt of prompts) {
    const args = Object.fromEntries(((prompt.arguments ?? []) as { name: string }[]).map((a) => [a.name, PROMPT_ARGS[a.name] ?? 'probe']));
    try {
      const result = await client.getPrompt({ name: String(prompt.name), arguments: args });
      if (result.messages.length === 0) failed.push({ item: String(prompt.name), got: result });
    } catch (err) {
      failed.push({ item: String(prompt.name), got: String(err) });
    }
  }
  for (const uri of [...resources, ...templates.map((t) => t.replace(/\{[^}]+\}/g, '1'))]) {
    try {
      const result = await client.readResource({ uri });
      if (result.contents.length === 0) failed.push({ item: uri, got: result });
    } catch (err) {
      failed.push({ item: uri, got: String(err) });
    }
  }
  return failed;
}
