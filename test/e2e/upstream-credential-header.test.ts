// The header a per-request upstream credential goes in (token exchange, userAuth, the gateway's
// oauth) against a node:http server that records every header line of every request: the
// credential replaces a static header of the same name in any letter case instead of going
// beside it, on POST, GET and DELETE alike, and a credential that cannot be had leaves the
// DELETE at close without one rather than falling back to the static value.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StreamableHttpTransport, type UpstreamCredential } from '../../src/transport/streamable-http.js';
import { silentLogger } from '../../src/util/log.js';

interface Seen {
  method: string;
  /** Each header line as sent: [lower-case name, value], duplicates kept. */
  lines: [string, string][];
}

let server: Server;
let url: string;
let seen: Seen[] = [];
const agent = new Agent();

beforeAll(async () => {
  server = createServer((req, res) => {
    const lines: [string, string][] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push([req.rawHeaders[i]!.toLowerCase(), req.rawHeaders[i + 1]!]);
    seen.push({ method: req.method!, lines });
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk));
    req.on('end', () => {
      if (req.method === 'POST') {
        const body = JSON.parse(text) as { id?: unknown };
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'up-1' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: {} }));
      } else if (req.method === 'GET') res.writeHead(405).end();
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});

beforeEach(() => {
  seen = [];
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await agent.close();
});

const credential = (value: () => Promise<string>, header?: string): UpstreamCredential => ({ authorization: value, invalidate: () => {}, ...(header === undefined ? {} : { header }) });

/** The values of header `name` (any case) a request carried. */
const valuesOf = (request: Seen, name: string): string[] => request.lines.filter(([n]) => n === name.toLowerCase()).map(([, v]) => v);

/** An initialize, a call, the GET stream (refused) and the DELETE at close, all through `t`. */
async function session(t: StreamableHttpTransport): Promise<void> {
  await t.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
  t.sessionEstablished('2025-11-25');
  await t.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } });
  await t.close();
}

describe('a per-request upstream credential and static headers', () => {
  it('replaces a static Authorization of any letter case: each request carries the per-request value alone', async () => {
    for (const [name, header] of [
      ['Authorization', undefined],
      ['AUTHORIZATION', undefined],
      ['authorization', 'Authorization'],
    ] as const) {
      seen = [];
      const t = new StreamableHttpTransport({
        url,
        headers: { [name]: 'Bearer gateway-static', 'x-team': 'wiki' },
        dispatcher: agent,
        logger: silentLogger,
        credentials: credential(async () => 'Bearer user-exchanged', header),
      });
      await session(t);
      expect(seen.map((r) => r.method)).toEqual(expect.arrayContaining(['POST', 'DELETE']));
      for (const request of seen) {
        expect(valuesOf(request, 'authorization'), `${request.method} with static ${name}`).toEqual(['Bearer user-exchanged']);
        expect(request.lines.some(([, v]) => v.includes('gateway-static')), `${request.method} with static ${name}`).toBe(false);
        // Other static headers still go.
        expect(valuesOf(request, 'x-team')).toEqual(['wiki']);
      }
    }
  });

  it('replaces a static header of the same name when the credential goes in another header (userAuth secret)', async () => {
    const t = new StreamableHttpTransport({
      url,
      headers: { 'X-Api-Key': 'gateway-static' },
      dispatcher: agent,
      logger: silentLogger,
      credentials: credential(async () => 'user-secret', 'x-api-key'),
    });
    await session(t);
    for (const request of seen) expect(valuesOf(request, 'x-api-key'), request.method).toEqual(['user-secret']);
  });

  it("sends the DELETE at close with no Authorization when the credential fails, never the static one", async () => {
    for (const name of ['Authorization', 'authorization']) {
      seen = [];
      const t = new StreamableHttpTransport({
        url,
        headers: { [name]: 'Bearer gateway-static' },
        dispatcher: agent,
        logger: silentLogger,
        credentials: credential(() => Promise.reject(new Error('the IdP is down'))),
        resume: { sessionId: 'up-1' },
      });
      await t.close();
      expect(seen.map((r) => r.method)).toEqual(['DELETE']);
      expect(valuesOf(seen[0]!, 'mcp-session-id')).toEqual(['up-1']);
      expect(valuesOf(seen[0]!, 'authorization'), `static ${name}`).toEqual([]);
    }
  });

  it('still sends static headers, Authorization included, to an upstream without a per-request credential', async () => {
    const t = new StreamableHttpTransport({ url, headers: { Authorization: 'Bearer gateway-static' }, dispatcher: agent, logger: silentLogger });
    await session(t);
    for (const request of seen) expect(valuesOf(request, 'authorization'), request.method).toEqual(['Bearer gateway-static']);
  });
});
