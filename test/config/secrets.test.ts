// Which config values the log redactor hears of: values ${VAR} put into a secret-bearing place
// (headers, client secrets, stdio env, http.url, the Redis URL), whatever their length.
import { describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { secretsOf } from '../../src/config/secrets.js';
import { Redactor } from '../../src/util/redact.js';

const env = { URL_KEY: 'urlsecret42', SHORT: 'k9x', HDR: 'tok', CS: 'cs1', REDIS_PW: 'pw', SESS_PW: 'spw', TX: 'tx1' };

function configured(): ReturnType<typeof configFromObject> {
  return configFromObject(
    {
      upstreams: {
        web: {
          http: {
            url: 'https://upstream.example.test/mcp?key=${URL_KEY}&short=${SHORT}',
            headers: { 'x-token': '${HDR}' },
            oauth: { tokenUrl: 'https://as.example.test/token', clientId: 'id', clientSecret: '${CS}' },
          },
        },
        local: { stdio: { command: 'node', env: { LEVEL: '${SHORT}' } } },
      },
      rateLimits: { store: { redis: { url: 'redis://user:${REDIS_PW}@redis.example.test:6379' } } },
      sessions: { store: { redis: { url: 'redis://user:${SESS_PW}@redis.example.test:6379' } } },
    },
    { file: 'gateway.yaml', env },
  );
}

describe('secretsOf', () => {
  it('values substituted into http.url, headers, client secrets, stdio env and the Redis URL are secrets, short or not', () => {
    const values = secretsOf(configured()).map((s) => (typeof s === 'string' ? s : s.value));
    for (const value of ['urlsecret42', 'k9x', 'tok', 'cs1', 'pw', 'spw']) expect(values, value).toContain(value);
  });

  it('the redactor fed from a config hides them in a log line', () => {
    const redactor = new Redactor(secretsOf(configured()));
    const line = 'GET https://upstream.example.test/mcp?key=urlsecret42&short=k9x token=tok redis://user:pw@redis';
    expect(redactor.redact(line)).toBe('GET https://upstream.example.test/mcp?key=[redacted]&short=[redacted] token=[redacted] redis://user:[redacted]@redis');
  });

  it("a token exchange's own client secret is a secret, written in the file or substituted", () => {
    const exchanging = (clientSecret: string) =>
      configFromObject(
        {
          auth: { oauth: { issuer: 'https://idp.example.test/', jwksUri: 'https://idp.example.test/keys', resource: 'https://gw.example.test/mcp' } },
          upstreams: { api: { http: { url: 'https://api.example.test/mcp', tokenExchange: { audience: 'api', client: { clientId: 'gw', clientSecret } } } } },
        },
        { file: 'gateway.yaml', env },
      );
    const values = (config: ReturnType<typeof configFromObject>) => secretsOf(config).map((s) => (typeof s === 'string' ? s : s.value));
    expect(values(exchanging('literal-exchange-secret'))).toContain('literal-exchange-secret');
    expect(values(exchanging('${TX}'))).toContain('tx1');
  });

  it('a value substituted elsewhere, or a fallback written in the file, is not a secret', () => {
    const config = configFromObject(
      { upstreams: { local: { prefix: '${PFX}', stdio: { command: 'node', env: { MODE: '${MODE:-dev}' } } } } },
      { file: 'gateway.yaml', env: { PFX: 'abc' } },
    );
    const values = secretsOf(config).map((s) => (typeof s === 'string' ? s : s.value));
    expect(values).not.toContain('abc');
    // The literal fallback stays a plain (literal) value: short, so never redacted.
    expect(secretsOf(config)).toEqual(['dev']);
  });
});
