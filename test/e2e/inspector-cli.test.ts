// The MCP Inspector CLI, a client the gateway does not share code with, against the gateway.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/paths.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';

const run = promisify(execFile);
const INSPECTOR = join(ROOT, 'node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');

let remote: EverythingHttp;
let gw: TestGateway;

beforeAll(async () => {
  remote = await startEverythingHttp();
  gw = await startGateway({ upstreams: { everything: upstream.everything(), remote: upstream.http(remote.url) } });
});

afterAll(async () => {
  await gw?.close();
  await remote?.close();
});

/** Runs the Inspector CLI; its working directory's parent must hold a package.json. */
async function inspector(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [INSPECTOR, '--cli', gw.url.href, '--transport', 'http', ...args], {
    cwd: join(ROOT, 'test'),
    timeout: 20_000,
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('MCP Inspector CLI', () => {
  it('lists the namespaced tools of both upstreams', async () => {
    const { tools } = (await inspector('--method', 'tools/list')) as { tools: { name: string }[] };
    const names = tools.map((t) => t.name);
    expect(names).toContain('everything__echo');
    expect(names).toContain('remote__echo');
  });

  it('calls a tool on each upstream', async () => {
    for (const name of ['everything__echo', 'remote__echo']) {
      const result = await inspector('--method', 'tools/call', '--tool-name', name, '--tool-arg', 'message=from inspector');
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: from inspector' }]);
    }
  });

  it('reads a namespaced resource and gets a prompt', async () => {
    const { resources } = (await inspector('--method', 'resources/list')) as { resources: { uri: string }[] };
    const uri = resources.find((r) => r.uri.startsWith('remote+'))!.uri;
    const read = (await inspector('--method', 'resources/read', '--uri', uri)) as { contents: { uri: string }[] };
    expect(read.contents[0]!.uri).toBe(uri);
    const prompt = (await inspector('--method', 'prompts/get', '--prompt-name', 'everything__simple-prompt')) as { messages: unknown[] };
    expect(prompt.messages.length).toBeGreaterThan(0);
  });
});
