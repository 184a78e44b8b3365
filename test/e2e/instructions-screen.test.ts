// An upstream's instructions (from initialize) under pinning: they are not pinned, but they are
// screened. Text hidden in them (here Unicode tag characters spelling an order) withholds them
// under hide and quarantine, and under quarantine so does the upstream being quarantined (a
// changed tool waits for approval, the instructions changed in plain words): a note stands in
// their place. Under warn they reach the client and a warning is logged; off looks at nothing.
// The fixture reads its variant when it starts; each session here has its own client info, so
// each opens its own catalog of the upstream, a new child reading the variant anew.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const TAG = /[\u{E0000}-\u{E007F}]/u;
const HIDDEN_NOTE = /^## docs\nThese instructions are withheld by pinning: they contain hidden text \(U\+E0052 U\+E0045 U\+E0041 [U+0-9A-F ]*\)\.$/;
const QUARANTINE_NOTE = '## docs\nThese instructions are withheld by pinning: their upstream is quarantined until a changed definition is approved.';

let dir: string;
const opened: Client[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-instructions-screen-'));
});

afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((client) => client.close()));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A gateway in front of the fixture, pinned in `mode`, reading its variant from `state`. */
function gatewayFor(mode: string, state: string): Promise<TestGateway> {
  return startGateway({ pinning: { mode }, upstreams: { docs: { stdio: { command: NODE, args: [join(FIXTURES, 'instructed-server.mjs')], env: { STATE_FILE: state } } } } }, { logLevel: 'warn' });
}

/** A session of its own client info: the docs section of its instructions, and its tools' names. */
async function session(gw: TestGateway, name: string): Promise<{ section: string; tools: string[] }> {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(gw.url));
  opened.push(client);
  const tools = (await client.listTools()).tools.map((tool) => tool.name);
  const instructions = client.getInstructions() ?? '';
  const at = instructions.indexOf('## docs\n');
  expect(at, instructions).toBeGreaterThanOrEqual(0);
  return { section: instructions.slice(at), tools };
}

describe('an upstream’s instructions under pinning', () => {
  it('are withheld under quarantine while they hide text, or while their upstream is quarantined', async () => {
    const state = join(dir, 'quarantine');
    await writeFile(state, 'v1');
    const gw = await gatewayFor('quarantine', state);
    try {
      expect(await session(gw, 'first')).toEqual({ section: '## docs\nUse `docs__search` to search the docs.', tools: ['docs__search'] });

      // The tool is as pinned: only the instructions changed, with hidden text.
      await writeFile(state, 'tagged');
      const tagged = await session(gw, 'second');
      expect.soft(tagged.section).toMatch(HIDDEN_NOTE);
      expect.soft(tagged.tools).toEqual(['docs__search']);

      // The tool changed (the upstream is quarantined) and so did the instructions, in plain words.
      await writeFile(state, 'changed');
      const changed = await session(gw, 'third');
      expect.soft(changed).toEqual({ section: QUARANTINE_NOTE, tools: [] });
    } finally {
      await gw.close();
    }
  });

  it.each([
    ['hide', 'withheld'],
    ['warn', 'passed on, and logged'],
    ['off', 'passed on, unscreened'],
  ])('with hidden text under %s are %s', async (mode) => {
    const state = join(dir, mode);
    await writeFile(state, 'tagged');
    const gw = await gatewayFor(mode, state);
    try {
      const client = new Client({ name: mode, version: '1.0.0' }, { capabilities: {} });
      await client.connect(new StreamableHTTPClientTransport(gw.url));
      opened.push(client);
      const instructions = client.getInstructions() ?? '';
      if (mode === 'hide') expect(instructions.slice(instructions.indexOf('## docs\n'))).toMatch(HIDDEN_NOTE);
      else expect(instructions).toMatch(TAG);
      const warning = gw.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === 'upstream instructions contain hidden text');
      if (mode === 'warn') expect(warning).toMatchObject({ upstream: 'docs', hidden: expect.arrayContaining(['U+E0052']) });
      else expect(warning).toBeUndefined();
    } finally {
      await gw.close();
    }
  });
});
