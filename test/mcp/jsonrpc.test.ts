// JSON-RPC ids as the gateway takes them: strings and safe integers only, since an integer past
// 2^53 - 1 has lost digits in JSON.parse and would be answered under another id.
import { describe, expect, it } from 'vitest';
import { answerableId, idProblem, parseMessage } from '../../src/mcp/jsonrpc.js';

// The raw text matters: 2^53 + 1 cannot be written as a JS number literal without changing.
const parse = (text: string): unknown => JSON.parse(text);

describe('request ids', () => {
  it('an integer id beyond 2^53 - 1 is not a valid id (it would echo back altered)', () => {
    const body = parse('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}');
    expect(parseMessage(body)).toBeUndefined();
    expect(answerableId(body)).toBeNull();
    expect(idProblem(body)).toMatch(/safe integer.*as strings/);
  });

  it('ids up to 2^53 - 1, negative ones and strings are kept exactly', () => {
    for (const id of [Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 0, 'a-string']) {
      const body = { jsonrpc: '2.0', id, method: 'ping' };
      expect(parseMessage(body)).toBe(body);
      expect(answerableId(body)).toBe(id);
      expect(idProblem(body)).toBeUndefined();
    }
  });

  it('a fractional or boolean id is refused and never echoed', () => {
    for (const text of ['{"jsonrpc":"2.0","id":1.5,"method":"ping"}', '{"jsonrpc":"2.0","id":true,"method":"ping"}', '{"jsonrpc":"2.0","id":1e400,"method":"ping"}']) {
      const body = parse(text);
      expect(parseMessage(body)).toBeUndefined();
      expect(answerableId(body)).toBeNull();
      expect(idProblem(body)).toBeDefined();
    }
  });

  it('a response with an unsafe id is not a message either', () => {
    expect(parseMessage(parse('{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}'))).toBeUndefined();
  });

  it('a notification has no id problem', () => {
    expect(idProblem({ jsonrpc: '2.0', method: 'notifications/initialized' })).toBeUndefined();
  });
});
