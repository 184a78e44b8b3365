// Sessions that cost nothing until they are used, seen from their lists: what a session lists
// comes from a catalog session per upstream and per (protocol version, capabilities), shared by
// every session with that key and closed when idle; a hung upstream is waited for once; a
// shared upstream still runs one child. A session's own upstream session is lazy-own-sessions.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { childrenNamed, gone } from '../helpers/children.js';
import { textOf, upstream } from '../helpers/gateway.js';
import { logLines, pidOf, probeUpstream, reaped, starts, toolNames, useLazyRig, type LogLine } from '../helpers/lazy.js';
import { EVERYTHING_BIN, MEMORY_BIN } from '../helpers/paths.js';

const { newProbe, start, logLine, open, samplingClient } = useLazyRig();

describe('catalogs', () => {
  it('sessions that only initialize and list cost one child per upstream, however many they are', async () => {
    const probe = newProbe('catalog');
    const gw = await start({ everything: upstream.everything(), memory: upstream.memory(), probe: probeUpstream(probe) });
    const list = async (client: Client) => ({
      tools: await toolNames(client),
      prompts: (await client.listPrompts()).prompts.map((p) => p.name),
      resources: (await client.listResources()).resources.map((r) => r.uri),
      instructions: client.getInstructions(),
      capabilities: client.getServerCapabilities(),
    });
    const first = await list(await open(gw));
    expect(first.tools).toEqual(expect.arrayContaining(['everything__echo', 'memory__read_graph', 'probe__pid', 'probe__slow']));
    expect(first.prompts.length).toBeGreaterThan(0);
    expect(first.resources.length).toBeGreaterThan(0);
    expect(first.instructions).toContain('lazy probe instructions');
    expect(first.capabilities).toMatchObject({ tools: {} });
    // Four more at once: they share the catalog the first one opened.
    const later = await Promise.all(Array.from({ length: 4 }, async () => list(await open(gw))));
    for (const listing of later) expect(listing).toEqual(first);

    expect(await childrenNamed(EVERYTHING_BIN)).toHaveLength(1);
    expect(await childrenNamed(MEMORY_BIN)).toHaveLength(1);
    expect(await childrenNamed(probe.tag)).toHaveLength(1);
    expect(await starts(probe)).toHaveLength(1);
  });

  it('sessions with other capabilities open one more catalog, shared by all that declare the same', async () => {
    const probe = newProbe('caps');
    const gw = await start({ everything: upstream.everything(), probe: probeUpstream(probe) });
    for (let i = 0; i < 2; i++) expect(await toolNames(await open(gw))).toContain('probe__pid');
    expect(await starts(probe)).toHaveLength(1);

    const sampling = await Promise.all(Array.from({ length: 3 }, () => samplingClient(gw, 'unused')));
    for (const { client } of sampling) expect(await toolNames(client)).toEqual(expect.arrayContaining(['probe__pid', 'everything__echo']));
    expect(await starts(probe)).toHaveLength(2);
    expect(await childrenNamed(EVERYTHING_BIN)).toHaveLength(2);

    // Another plain session uses the first catalog again.
    expect(await toolNames(await open(gw))).toContain('probe__pid');
    expect(await starts(probe)).toHaveLength(2);
    expect(await childrenNamed(probe.tag)).toHaveLength(2);
  });

  it('an unused catalog session is closed after idleTimeout and opened again by the next initialize or list', async () => {
    const probe = newProbe('catalog-idle');
    const gw = await start({ probe: { ...probeUpstream(probe), idleTimeout: '1s' } });
    const closedCatalog = (line: LogLine): boolean => line.msg === 'idle catalog session closed' && line.upstream === 'probe';
    const a = await open(gw);
    expect(await toolNames(a)).toContain('probe__pid');
    const [firstCatalog] = await starts(probe);
    await logLine(gw, closedCatalog, 'the first catalog closed');
    await gone([firstCatalog!], 'the first catalog child');

    // A new session's initialize opens it again.
    const b = await open(gw);
    expect(await toolNames(b)).toContain('probe__pid');
    expect(await starts(probe)).toHaveLength(2);
    await logLine(gw, closedCatalog, 'the second catalog closed', 2);
    await gone([(await starts(probe))[1]!], 'the second catalog child');

    // A list in an existing session opens it again too.
    expect(await toolNames(a)).toContain('probe__pid');
    expect(await starts(probe)).toHaveLength(3);
    // No session ever called a tool: none of them had a child of its own.
    expect(logLines(gw, reaped('probe'))).toEqual([]);
  });
});

describe('a hung upstream', () => {
  it('is waited for by the first session only, left out once and never probed again; the good one is listed', async () => {
    const good = newProbe('good');
    const hung = newProbe('hung');
    const gw = await start({ good: probeUpstream(good), hung: { ...probeUpstream(hung, { HUNG: '1' }), initTimeoutMs: 500 } });
    const first = await open(gw);
    const tools = await toolNames(first);
    expect(tools).toContain('good__pid');
    expect(tools.filter((name) => name.startsWith('hung__'))).toEqual([]);

    const later = await Promise.all(Array.from({ length: 5 }, () => open(gw)));
    for (const client of later) {
      const names = await toolNames(client);
      expect(names).toContain('good__pid');
      expect(names.filter((name) => name.startsWith('hung__'))).toEqual([]);
    }
    expect(await pidOf(later[0]!, 'good__pid')).toBeGreaterThan(0);

    const leftOut = logLines(gw, (line) => line.msg === 'upstream left out of the catalog' && line.upstream === 'hung');
    expect(leftOut).toHaveLength(1);
    expect(leftOut[0]!.level).toBe('warn');
    expect(await starts(hung)).toHaveLength(1);
  });
});

describe('what does not change', () => {
  it('a shared upstream still runs one child for every session, and each session gets its own progress', async () => {
    const probe = newProbe('shared');
    const gw = await start({ probe: { ...probeUpstream(probe), sharing: 'shared' } });
    const [a, b] = await Promise.all([open(gw), open(gw)]);
    const [pidA, pidB] = await Promise.all([pidOf(a), pidOf(b)]);
    expect(pidA).toBe(pidB);
    const seen = { a: [] as unknown[], b: [] as unknown[] };
    const [ra, rb] = await Promise.all([
      a.callTool({ name: 'probe__slow', arguments: { steps: 3 } }, CallToolResultSchema, { onprogress: (p) => void seen.a.push(p) }),
      b.callTool({ name: 'probe__slow', arguments: { steps: 5 } }, CallToolResultSchema, { onprogress: (p) => void seen.b.push(p) }),
    ]);
    expect([textOf(ra), textOf(rb)]).toEqual(['done', 'done']);
    expect(seen.a).toEqual([1, 2, 3].map((progress) => ({ progress, total: 3 })));
    expect(seen.b).toEqual([1, 2, 3, 4, 5].map((progress) => ({ progress, total: 5 })));
    expect(await pidOf(a)).toBe(pidA);
    expect(logLines(gw, reaped('probe'))).toEqual([]);
  });
});
