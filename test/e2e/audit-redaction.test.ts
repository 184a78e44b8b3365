// What a running gateway records of a request naming a secret: a resource read whose URI carries
// a configured secret and a JWT, and a call of a tool named after a JWT. The log line already
// hid them; the audit record (file sink) and the request's spans hide them too.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { createGateway } from '../../src/gateway.js';
import { createLogger } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';
import { connectClient, upstream } from '../helpers/gateway.js';
import { SERVER, startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { ROOT } from '../helpers/paths.js';

const SECRET = 'configured-secret-0123';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVlLTEyMw';
const URI = `everything+demo://resource/x?key=${SECRET}&t=${JWT}`;
const TOOL = `everything__${JWT}`;

describe('secrets a client names, in audit records and spans', () => {
  let dir: string;
  let otlp: OtlpReceiver;
  const logs: string[] = [];
  let records: Record<string, unknown>[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'switchyard-audit-redaction-'));
    otlp = await startOtlpReceiver();
    const config = configFromObject(
      {
        listen: { port: 0 },
        health: { probeInterval: 0 },
        upstreams: { everything: { stdio: { ...upstream.everything().stdio, env: { AUDIT_SECRET: SECRET } } } },
        audit: { sink: { file: { path: 'audit.jsonl' } } },
        tracing: { otlp: { endpoint: otlp.url } },
      },
      { file: join(ROOT, 'gateway.test.yaml'), env: {} },
    );
    // As main.ts does: the redactor learns the config's secrets from the gateway.
    const redactor = new Redactor();
    const logger = createLogger({ level: 'info', write: (line) => void logs.push(line), redact: (line) => redactor.redact(line) });
    const gateway = createGateway(config, { logger, redactor, configDir: dir, baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME } });
    const url = await gateway.start();
    try {
      const client = await connectClient(url);
      await expect(client.readResource({ uri: URI })).rejects.toMatchObject({ code: -32602 });
      await expect(client.callTool({ name: TOOL, arguments: {} })).rejects.toMatchObject({ code: -32602 });
      await client.close();
    } finally {
      await gateway.close();
    }
    records = (await readFile(join(dir, 'audit.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }, 30_000);

  afterAll(async () => {
    await otlp?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the call log lines hide them', () => {
    const calls = logs.filter((line) => line.includes('"msg":"call"'));
    expect(calls).toHaveLength(2);
    for (const line of calls) {
      expect(line).not.toContain(SECRET);
      expect(line).not.toContain('eyJ');
    }
  });

  it('so do the audit records', () => {
    const read = records.find((r) => r.event === 'resource.read')!;
    const call = records.find((r) => r.event === 'tool.call')!;
    expect(read.name).toBe('everything+demo://resource/x?key=[redacted]&t=[redacted]');
    expect(call.name).toBe('everything__[redacted]');
    for (const record of records) {
      expect(JSON.stringify(record)).not.toContain(SECRET);
      expect(JSON.stringify(record)).not.toContain('eyJ');
    }
  });

  it('and the SERVER spans: name, URI and tool name attributes, status message', async () => {
    await otlp.waitFor(() => otlp.spans.filter((s) => s.kind === SERVER && s.name !== 'initialize').length >= 2, 'the SERVER spans');
    const server = otlp.spans.filter((s) => s.kind === SERVER && s.name !== 'initialize');
    const read = server.find((s) => s.name === 'resources/read')!;
    expect(read.attributes['mcp.resource.uri']).toBe('everything+demo://resource/x?key=[redacted]&t=[redacted]');
    expect(read.status.message).toBe('Unknown resource: everything+demo://resource/x?key=[redacted]&t=[redacted]');
    const call = server.find((s) => s.name.startsWith('tools/call'))!;
    expect(call.name).toBe('tools/call everything__[redacted]');
    expect(call.attributes['gen_ai.tool.name']).toBe('everything__[redacted]');
    for (const span of otlp.spans) {
      const text = JSON.stringify([span.name, span.attributes, span.status, span.events]);
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('eyJ');
    }
  });
});
