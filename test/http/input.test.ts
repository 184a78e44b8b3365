// The request target as the edge reads it: a malformed percent-escape is the client's fault,
// told apart before anything decodes the target (decodeURIComponent throws URIError on it).
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { decodesCleanly, fromIncoming, fromRequest } from '../../src/http/input.js';

/** A request as Node's server hands it over: a readable stream with its target, method and headers (no socket). */
function incoming(target: string): IncomingMessage {
  const message = Object.assign(new Readable({ read() {} }), { url: target, method: 'POST', headers: { host: 'localhost' } });
  return message as unknown as IncomingMessage;
}

const MALFORMED = ['/mcp?%', '/mcp?%zz=1', '/mcp?access_token%=1', '/mcp?%E0%A4%A', '/mcp?x=%FF', '/mc%p'];
const FINE = ['/mcp', '/mcp?', '/mcp?a=1&b=%20x', '/mcp?name=%E2%9C%93', '/mcp?plus=a+b'];

describe('percent-encoding of the target', () => {
  it('a malformed escape anywhere in the target is told apart', () => {
    for (const target of MALFORMED) expect(decodesCleanly(target), target).toBe(false);
    for (const target of FINE) expect(decodesCleanly(target), target).toBe(true);
  });

  it('a Node request with a malformed query is not well encoded, and asking about the query never throws', () => {
    for (const target of MALFORMED) {
      const input = fromIncoming(incoming(target));
      expect(input.wellEncoded, target).toBe(false);
      expect(() => input.hasQueryParam('access_token')).not.toThrow();
    }
    expect(fromIncoming(incoming('/mcp?access_token=x')).hasQueryParam('access_token')).toBe(true);
    expect(fromIncoming(incoming('/mcp?%61ccess_token=x')).hasQueryParam('access_token')).toBe(true);
    expect(fromIncoming(incoming('/mcp?a=1')).wellEncoded).toBe(true);
  });

  it('a fetch Request with a malformed query is not well encoded either', () => {
    const input = fromRequest(new Request('http://localhost/mcp?%', { method: 'POST' }));
    expect(input.wellEncoded).toBe(false);
    expect(() => input.hasQueryParam('access_token')).not.toThrow();
    expect(fromRequest(new Request('http://localhost/mcp?x=%20')).wellEncoded).toBe(true);
  });
});
