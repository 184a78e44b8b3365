// Content URIs on their own: which URIs inside results are namespaced (resource links and
// embedded resources in tool results and prompt messages, resources/read contents) and which
// are not (text, structuredContent, _meta), and that a result with nothing to rewrite is the
// very object that came in.
import { describe, expect, it } from 'vitest';
import { exposePromptResult, exposeReadResult, exposeToolResult } from '../../src/router/content.js';
import { NamespaceCodec } from '../../src/router/namespace.js';

const codec = new NamespaceCodec({ separator: '__', maxNameLength: 64 }, [
  { upstream: 'docs', prefix: 'docs' },
  { upstream: 'bare', prefix: '' },
]);

describe('exposeToolResult', () => {
  it('namespaces resource links and embedded resources, and nothing else', () => {
    const result = {
      content: [
        { type: 'text', text: 'see file:///a.md' },
        { type: 'resource_link', uri: 'file:///a.md', name: 'a' },
        { type: 'resource', resource: { uri: 'file:///b.md', text: 'b' } },
        { type: 'image', data: 'x', mimeType: 'image/png' },
      ],
      structuredContent: { uri: 'file:///a.md' },
      _meta: { uri: 'file:///a.md' },
    };
    expect(exposeToolResult(result, codec, 'docs')).toEqual({
      content: [
        { type: 'text', text: 'see file:///a.md' },
        { type: 'resource_link', uri: 'docs+file:///a.md', name: 'a' },
        { type: 'resource', resource: { uri: 'docs+file:///b.md', text: 'b' } },
        { type: 'image', data: 'x', mimeType: 'image/png' },
      ],
      structuredContent: { uri: 'file:///a.md' },
      _meta: { uri: 'file:///a.md' },
    });
    // The upstream's own object is left as it was.
    expect(result.content[1]).toEqual({ type: 'resource_link', uri: 'file:///a.md', name: 'a' });
  });

  it('returns the same object when there is nothing to rewrite (text only, no content, an unprefixed upstream)', () => {
    const text = { content: [{ type: 'text', text: 'hi' }] };
    expect(exposeToolResult(text, codec, 'docs')).toBe(text);
    const none = { isError: true };
    expect(exposeToolResult(none, codec, 'docs')).toBe(none);
    const bare = { content: [{ type: 'resource_link', uri: 'file:///a.md', name: 'a' }] };
    expect(exposeToolResult(bare, codec, 'bare')).toEqual(bare);
  });

  it('leaves malformed blocks alone', () => {
    const odd = { content: [null, 3, { type: 'resource_link' }, { type: 'resource', resource: 'x' }] };
    expect(exposeToolResult(odd, codec, 'docs')).toEqual(odd);
  });
});

describe('exposePromptResult and exposeReadResult', () => {
  it('namespace embedded resources of prompt messages, single or in arrays', () => {
    const result = {
      messages: [
        { role: 'user', content: { type: 'resource', resource: { uri: 'file:///c.md', text: 'c' } } },
        { role: 'user', content: [{ type: 'resource_link', uri: 'file:///d.md', name: 'd' }] },
        { role: 'assistant', content: { type: 'text', text: 'file:///e.md' } },
      ],
    };
    expect(exposePromptResult(result, codec, 'docs').messages).toEqual([
      { role: 'user', content: { type: 'resource', resource: { uri: 'docs+file:///c.md', text: 'c' } } },
      { role: 'user', content: [{ type: 'resource_link', uri: 'docs+file:///d.md', name: 'd' }] },
      { role: 'assistant', content: { type: 'text', text: 'file:///e.md' } },
    ]);
  });

  it('namespace every contents[].uri of a read', () => {
    expect(exposeReadResult({ contents: [{ uri: 'file:///a.md', text: 'a' }, { uri: 'file:///a.md#2', blob: 'YQ==' }] }, codec, 'docs')).toEqual({
      contents: [
        { uri: 'docs+file:///a.md', text: 'a' },
        { uri: 'docs+file:///a.md#2', blob: 'YQ==' },
      ],
    });
  });
});
