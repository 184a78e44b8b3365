// Content URIs on their own: which URIs inside results are namespaced (resource links and
// embedded resources in tool results and prompt messages, resources/read contents) and which
// are not (text, structuredContent, _meta), and that a result with nothing to rewrite is the
// very object that came in.
import { describe, expect, it } from 'vitest';
import { exposePromptResult, exposeReadResult, exposeTaskAnswer, exposeToolMeta, exposeToolResult } from '../../src/names/content.js';
import { rewriteNotification } from '../../src/links/relay.js';
import { mergeCapabilities } from '../../src/mcp/capabilities.js';
import { NamespaceCodec } from '../../src/names/namespace.js';

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

describe('MCP Apps (io.modelcontextprotocol/ui)', () => {
  it("namespaces a listed tool's UI resource in _meta.ui.resourceUri and the legacy flat key, keeping the ui:// scheme", () => {
    const tool = { name: 'docs__get-time', _meta: { ui: { resourceUri: 'ui://get-time/app.html', visibility: ['model'] }, 'ui/resourceUri': 'ui://get-time/app.html', other: 'ui://x' } };
    expect(exposeToolMeta(tool, codec, 'docs')).toEqual({
      name: 'docs__get-time',
      _meta: { ui: { resourceUri: 'ui://docs/get-time/app.html', visibility: ['model'] }, 'ui/resourceUri': 'ui://docs/get-time/app.html', other: 'ui://x' },
    });
    expect(tool._meta.ui.resourceUri).toBe('ui://get-time/app.html');
  });

  it('returns the same tool when it names no UI resource, or its upstream is unprefixed', () => {
    const plain = { name: 'a', _meta: { x: 1 } };
    expect(exposeToolMeta(plain, codec, 'docs')).toBe(plain);
    const bare = { name: 'b', _meta: { ui: { resourceUri: 'ui://b/app.html' } } };
    expect(exposeToolMeta(bare, codec, 'bare')).toBe(bare);
  });

  it('maps ui://<prefix>/<rest> back to the upstream and ui://<rest>', () => {
    expect(codec.exposeUri('docs', 'ui://get-time/app.html')).toBe('ui://docs/get-time/app.html');
    expect(codec.splitUri('ui://docs/get-time/app.html')).toEqual({ upstream: 'docs', uri: 'ui://get-time/app.html' });
    // The unprefixed upstream's UI URIs are bare, unless their first segment is another prefix.
    expect(codec.exposeUri('bare', 'ui://app/x.html')).toBe('ui://app/x.html');
    expect(codec.splitUri('ui://app/x.html')).toEqual({ upstream: 'bare', uri: 'ui://app/x.html' });
    expect(codec.exposeUri('bare', 'ui://docs/x.html')).toBe('ui://bare/docs/x.html');
    expect(codec.splitUri('ui://bare/docs/x.html')).toEqual({ upstream: 'bare', uri: 'ui://docs/x.html' });
  });

  it('advertises the extensions the upstreams declare, the first declaration of each winning', () => {
    const merged = mergeCapabilities([{ tools: {}, extensions: { 'io.modelcontextprotocol/ui': { a: 1 } } }, { extensions: { 'io.modelcontextprotocol/ui': { a: 2 }, 'com.example/x': {} } }]);
    expect(merged.extensions).toEqual({ 'io.modelcontextprotocol/ui': { a: 1 }, 'com.example/x': {} });
    expect(mergeCapabilities([{ tools: {} }]).extensions).toBeUndefined();
  });
});

describe("a task's result", () => {
  const link = { type: 'resource_link', uri: 'file:///a.md', name: 'a' };
  const exposed = { ...link, uri: 'docs+file:///a.md' };

  it('is namespaced in tasks/result and inline in a task', () => {
    expect(exposeTaskAnswer({ content: [link] }, codec, 'docs')).toEqual({ content: [exposed] });
    expect(exposeTaskAnswer({ taskId: 't', status: 'completed', result: { content: [link] } }, codec, 'docs')).toEqual({ taskId: 't', status: 'completed', result: { content: [exposed] } });
    const plain = { taskId: 't', status: 'working' };
    expect(exposeTaskAnswer(plain, codec, 'docs')).toBe(plain);
  });

  it("is namespaced in the Tasks extension's notifications/tasks", () => {
    const message = { jsonrpc: '2.0' as const, method: 'notifications/tasks', params: { taskId: 't', status: 'completed', result: { content: [link] } } };
    expect(rewriteNotification('docs', message, codec)?.params).toEqual({ taskId: 'docs:t', status: 'completed', result: { content: [exposed] } });
  });
});
