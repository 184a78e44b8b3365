// Issue 35 item 2: the gateway's argument check is never stricter than the server. A fixture
// server whose schemas give a required property a default, name formats it does not assert and
// a keyword of its own is called with the SDK v1 client directly and through Switchyard: what
// the server accepts directly it accepts through the gateway, with the arguments exactly as the
// client sent them; what breaks the schema's structure is still refused at the edge.
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const LENIENT = join(FIXTURES, 'lenient-server.mjs');

let gw: TestGateway;
let direct: Client;
let through: Client;

beforeAll(async () => {
  gw = await startGateway({ upstreams: { lenient: { stdio: { command: NODE, args: [LENIENT] } } } }, { logLevel: 'warn' });
  direct = new Client({ name: 'argument-check', version: '1.0.0' });
  await direct.connect(new StdioClientTransport({ command: NODE, args: [LENIENT], env: getDefaultEnvironment(), stderr: 'ignore' }));
  through = await connectClient(gw.url);
}, 30_000);

afterAll(async () => {
  await Promise.allSettled([direct?.close(), through?.close()]);
  await gw?.close();
});

/** The same call directly and through Switchyard (where the tool is `lenient__<name>`). */
async function both(name: string, args: Record<string, unknown>): Promise<{ direct: unknown; switchyard: unknown }> {
  const plain = (result: unknown) => {
    const { _meta: _m, ...rest } = result as Record<string, unknown>;
    return rest;
  };
  return {
    direct: plain(await direct.callTool({ name, arguments: args })),
    switchyard: plain(await through.callTool({ name: `lenient__${name}`, arguments: args })),
  };
}

describe('the argument check', () => {
  it('counts a default as given: a required property with a default may be left out', async () => {
    const { direct, switchyard } = await both('greet', { name: 'Ada' });
    expect(direct).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    expect(switchyard).toEqual(direct);
  });

  it('forwards exactly the arguments the client sent, defaults not filled in', async () => {
    const { direct, switchyard } = await both('greet', { name: 'Ada', punctuation: {} });
    expect(direct).toMatchObject({ structuredContent: { received: { name: 'Ada', punctuation: {} } } });
    expect(switchyard).toEqual(direct);
  });

  it('does not assert formats (unknown or known) nor refuse unknown keywords', async () => {
    const { direct, switchyard } = await both('contact', { handle: '@@not a handle', email: 'not-an-email', phone: 'tel:123' });
    expect(direct).toMatchObject({ content: [{ type: 'text', text: 'stored @@not a handle' }] });
    expect(switchyard).toEqual(direct);
  });

  it('still refuses at the edge what breaks the schema: a wrong type, a missing property without default, a value out of range', async () => {
    const refused = [
      [{ name: 5 }, 'Invalid arguments for tool lenient__greet: /name must be string'],
      [{ greeting: 'Hi' }, 'Invalid arguments for tool lenient__greet: /name is required'],
    ] as const;
    for (const [args, message] of refused) {
      const result = await through.callTool({ name: 'lenient__greet', arguments: args });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(message);
    }
    const range = await through.callTool({ name: 'lenient__contact', arguments: { handle: 'ada', age: -1 } });
    expect(range.isError).toBe(true);
    expect(textOf(range)).toBe('Invalid arguments for tool lenient__contact: /age must be >= 0');
  });
});
