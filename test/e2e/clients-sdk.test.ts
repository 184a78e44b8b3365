// Issue 22 with the official SDK clients: v1 (@modelcontextprotocol/sdk) and v2
// (@modelcontextprotocol/client) at 2025-11-25 and at 2026-07-28 each run one scenario against
// server-everything directly and through Switchyard, and get the same outcome. With v1, a
// resource link a tool returns can be followed (read, subscribed, updated) over an HTTP and a
// stdio upstream.
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2, type VersionNegotiationOptions } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, recordNotifications, startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { answerAsV1, asked, v1Session, describeSdkParity, directSide, ELICIT_REPLY, gatewaySide, sampleReply, startRig, type Asked, type Rig, type SdkSession, type Side } from '../helpers/parity.js';
import { EVERYTHING_BIN, NODE } from '../helpers/paths.js';

let rig: Rig;

beforeAll(async () => {
  rig = await startRig();
});

afterAll(async () => {
  await rig?.close();
});

async function openV1(side: Side): Promise<SdkSession> {
  const log: Asked[] = [];
  const client = await connectClient(side.url, { sampling: {}, elicitation: {} }, (c) => answerAsV1(c, log));
  return v1Session(client, log, (client.transport as { protocolVersion?: string } | undefined)?.protocolVersion);
}

/** A v2 client; `negotiation` undefined is its default, the plain 2025 handshake. */
function openV2(negotiation: (side: Side) => VersionNegotiationOptions | undefined) {
  return async (side: Side): Promise<SdkSession> => {
    const log: Asked[] = [];
    const client = new ClientV2({ name: 'switchyard-parity', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} } }, versionNegotiation: negotiation(side) });
    client.setRequestHandler('sampling/createMessage', async (request) => {
      log.push(asked(request.method, request.params));
      return sampleReply(request.params);
    });
    client.setRequestHandler('elicitation/create', async (request) => {
      log.push(asked(request.method, request.params));
      return ELICIT_REPLY;
    });
    await client.connect(new TransportV2(side.url));
    return {
      version: client.getNegotiatedProtocolVersion(),
      listTools: () => client.listTools(),
      callTool: (name, args, onprogress) => client.callTool({ name, arguments: args }, onprogress ? { onprogress } : undefined),
      getPrompt: (name, args) => client.getPrompt({ name, arguments: args }),
      readResource: (uri) => client.readResource({ uri }),
      asked: log,
      close: () => client.close(),
    };
  };
}

describeSdkParity('SDK v1 client', () => rig, openV1, { versions: { direct: '2025-11-25', switchyard: '2025-11-25' } });

describeSdkParity('SDK v2 client at 2025-11-25', () => rig, openV2(() => undefined), { versions: { direct: '2025-11-25', switchyard: '2025-11-25' } });

// server-everything speaks only the 2025 era, so directly the v2 client's `auto` mode falls back to
// 2025-11-25 (a pin would refuse it); through Switchyard the same client is pinned to 2026-07-28,
// and the upstream's sampling and elicitation reach it as input_required rounds.
describeSdkParity('SDK v2 client at 2026-07-28', () => rig, openV2((side) => ({ mode: side.kind === 'direct' ? 'auto' : { pin: '2026-07-28' } })), {
  versions: { direct: '2025-11-25', switchyard: '2026-07-28' },
  crossEra: true,
});

describe('following a resource link a tool returned (SDK v1)', () => {
  let stdioGateway: TestGateway;
  const clients: Client[] = [];

  beforeAll(async () => {
    stdioGateway = await startGateway({ upstreams: { everything: upstream.everything() } }, { logLevel: 'warn' });
  });

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await stdioGateway?.close();
  });

  async function overStdio(): Promise<Client> {
    const client = new Client({ name: 'switchyard-parity', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new StdioClientTransport({ command: NODE, args: [EVERYTHING_BIN, 'stdio'], stderr: 'ignore' }));
    return client;
  }

  const routes: [string, () => Promise<{ side: Side; client: Client }>][] = [
    ['directly over HTTP', async () => ({ side: rig.direct, client: await connectClient(rig.direct.url) })],
    ['through Switchyard to an HTTP upstream', async () => ({ side: rig.switchyard, client: await connectClient(rig.switchyard.url) })],
    // A stdio server has no URL; the side only names things here.
    ['directly over stdio', async () => ({ side: directSide(new URL('stdio:everything')), client: await overStdio() })],
    ['through Switchyard to a stdio upstream', async () => ({ side: gatewaySide(stdioGateway.url), client: await connectClient(stdioGateway.url) })],
  ];

  it.each(routes)('works %s: read it, subscribe to it, hear it updated', async (_route, open) => {
    const { side, client } = await open();
    clients.push(client);
    const notifications = recordNotifications(client);
    const data = `data:text/plain;base64,${Buffer.from('follow me').toString('base64')}`;
    const result = await client.callTool({ name: side.name('gzip-file-as-resource'), arguments: { name: 'follow.txt.gz', data, outputType: 'resourceLink' } });
    const link = (result.content as { type: string; uri?: string }[]).find((b) => b.type === 'resource_link');
    expect(link?.uri).toBe(side.uri('demo://resource/session/follow.txt.gz'));

    const read = await client.readResource({ uri: link!.uri! });
    expect(read.contents).toHaveLength(1);
    expect(read.contents[0]).toMatchObject({ uri: link!.uri, mimeType: 'application/gzip' });
    expect(Buffer.from((read.contents[0] as { blob: string }).blob, 'base64').subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));

    await expect(client.subscribeResource({ uri: link!.uri! })).resolves.toEqual({});
    // server-everything sends an update for each subscribed URI as soon as updates are turned on.
    await client.callTool({ name: side.name('toggle-subscriber-updates'), arguments: {} });
    try {
      const updated = await notifications.waitFor((n) => n.method === 'notifications/resources/updated' && n.params?.uri === link!.uri, `an update of ${link!.uri}`);
      expect(updated.params).toEqual({ uri: link!.uri });
    } finally {
      await client.callTool({ name: side.name('toggle-subscriber-updates'), arguments: {} });
    }
  });
});
