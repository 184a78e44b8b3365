// Upstream kinds and their lifecycle: the deprecated HTTP+SSE transport, failing upstreams left
// out of a session, env isolation of stdio children, and cleanup when a client session ends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, terminateSession, textOf, upstream } from '../helpers/gateway.js';
import { NODE } from '../helpers/paths.js';
import { startEverythingHttp, type EverythingHttp, alive } from '../helpers/processes.js';

let remote: EverythingHttp;

beforeAll(async () => {
  remote = await startEverythingHttp();
});

afterAll(async () => {
  await remote?.close();
});



describe('upstream transports', () => {
  it('reaches an upstream over the deprecated HTTP+SSE transport', async () => {
    const gw = await startGateway({ upstreams: { legacy: upstream.http(remote.sseUrl, 'sse') } });
    const client = await connectClient(gw.url);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('legacy__echo');
      expect(textOf(await client.callTool({ name: 'legacy__echo', arguments: { message: 'old transport' } }))).toBe('Echo: old transport');
      expect((await client.listResources()).resources[0]!.uri).toMatch(/^legacy\+demo:\/\//);
    } finally {
      await client.close();
      await gw.close();
    }
  });
});

describe('failing upstreams', () => {
  it('leaves out upstreams that crash or never answer, and reports them down on /healthz', async () => {
    const gw = await startGateway({
      upstreams: {
        good: upstream.paged(),
        crashes: { stdio: { command: NODE, args: ['-e', 'process.exit(3)'] } },
        hangs: { stdio: { command: NODE, args: ['-e', 'setInterval(() => {}, 1000)'] }, initTimeoutMs: 300 },
        missing: { stdio: { command: '/nonexistent/binary' } },
        refused: { http: { url: 'http://127.0.0.1:1/mcp' } },
      },
    });
    const client = await connectClient(gw.url);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names.length).toBeGreaterThan(0);
      expect(names.every((n) => n.startsWith('good__'))).toBe(true);
      const health = (await (await fetch(new URL('/healthz', gw.url))).json()) as { upstreams: Record<string, { state: string; lastError?: string }> };
      expect(health.upstreams.good!.state).toBe('up');
      for (const name of ['crashes', 'hangs', 'missing', 'refused']) {
        expect(health.upstreams[name]!.state, name).toBe('down');
        expect(health.upstreams[name]!.lastError, name).toBeTruthy();
      }
      expect(health.upstreams.hangs!.lastError).toMatch(/did not initialize within 300 ms/);
      // A call to a left-out upstream names it.
      await expect(client.callTool({ name: 'hangs__anything', arguments: {} })).rejects.toThrow(/hangs is unavailable/);
      // What failed, but never the command's path or the address (those are the log's).
      const missing = await client.callTool({ name: 'missing__anything', arguments: {} }).catch((err: Error & { code?: number }) => err);
      expect(missing).toMatchObject({ code: -32005, message: expect.stringMatching(/^MCP error -32005: Upstream missing is unavailable: cannot start the upstream's command \(ENOENT\)/) });
      const refused = await client.callTool({ name: 'refused__anything', arguments: {} }).catch((err: Error & { code?: number }) => err);
      expect(refused).toMatchObject({ code: -32005, message: expect.stringMatching(/^MCP error -32005: Upstream refused is unavailable: (?!.*is unavailable).*upstream unreachable \(ECONNREFUSED\)/) });
      for (const message of [(missing as Error).message, (refused as Error).message]) expect(message).not.toMatch(/nonexistent|127\.0\.0\.1|:1\b|\n\s+at /);
      expect(gw.logs.some((line) => line.includes('/nonexistent/binary'))).toBe(true);
    } finally {
      await client.close();
      await gw.close();
    }
  });
});

describe('stdio children', () => {
  it('get only the env their config names, plus PATH and HOME', async () => {
    const gw = await startGateway(
      { upstreams: { everything: { stdio: { ...upstream.everything().stdio, env: { GREETING: 'hello' } } } } },
      { baseEnv: { PATH: process.env.PATH, HOME: '/home/test', GATEWAY_SECRET: 'must-not-leak' } },
    );
    const client = await connectClient(gw.url);
    try {
      const env = JSON.parse(textOf(await client.callTool({ name: 'everything__get-env', arguments: {} }))) as Record<string, string>;
      expect(env.GREETING).toBe('hello');
      expect(env.HOME).toBe('/home/test');
      expect(env.PATH).toBe(process.env.PATH);
      expect(env.GATEWAY_SECRET).toBeUndefined();
      expect(Object.keys(env).sort()).toEqual(['GREETING', 'HOME', 'PATH']);
    } finally {
      await client.close();
      await gw.close();
    }
  });
});

describe('ending a client session', () => {
  it('stops its stdio children and DELETEs its upstream HTTP sessions', async () => {
    const gw = await startGateway({ upstreams: { paged: upstream.paged(), remote: upstream.http(remote.url) } });
    const client = await connectClient(gw.url);
    const before = await remote.stats();
    const pid = Number(textOf(await client.callTool({ name: 'paged__pid', arguments: {} })));
    // A session's own upstream sessions are opened by its first requests that need them.
    expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: 'open' } }))).toBe('Echo: open');
    expect(alive(pid)).toBe(true);
    try {
      await terminateSession(client);
      expect(alive(pid)).toBe(false);
      const after = await remote.stats();
      expect(after.deletes).toBe(before.deletes + 1);
    } finally {
      await client.close();
      await gw.close();
    }
  });

  it('gives every client session its own upstream sessions', async () => {
    const gw = await startGateway({ upstreams: { paged: upstream.paged() } });
    const a = await connectClient(gw.url);
    const b = await connectClient(gw.url);
    try {
      const pidA = textOf(await a.callTool({ name: 'paged__pid', arguments: {} }));
      const pidB = textOf(await b.callTool({ name: 'paged__pid', arguments: {} }));
      expect(pidA).not.toBe(pidB);
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
      await gw.close();
    }
  });

  it('stops every child when the gateway closes', async () => {
    const gw = await startGateway({ upstreams: { paged: upstream.paged() } });
    const client = await connectClient(gw.url);
    const pid = Number(textOf(await client.callTool({ name: 'paged__pid', arguments: {} })));
    await client.close();
    await gw.close();
    expect(alive(pid)).toBe(false);
  });
});
