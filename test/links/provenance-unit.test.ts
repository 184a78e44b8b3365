// UriProvenance on its own: the bare URIs a result carries (text, structuredContent; not _meta),
// trailing punctuation left out; per session, the latest carrier wins, and the session's reach
// decides.
import { describe, expect, it } from 'vitest';
import { UriProvenance } from '../../src/links/provenance.js';
import type { DownstreamSession } from '../../src/links/session.js';

const session = () => ({}) as DownstreamSession;
const yes = () => true;

describe('UriProvenance', () => {
  it('learns the URIs of a result\'s text and structuredContent, not of its _meta', () => {
    const p = new UriProvenance();
    const s = session();
    p.learn(s, 'a', 'tools/call', {
      content: [{ type: 'text', text: 'See fmcp://docs/readme. Or (fmcp://docs/faq), ok?' }],
      structuredContent: { links: [{ href: 'git://repo/x' }] },
      _meta: { see: 'meta://hidden' },
    });
    expect(['fmcp://docs/readme', 'fmcp://docs/faq', 'git://repo/x'].map((u) => p.ownerOf(s, u, yes))).toEqual(['a', 'a', 'a']);
    expect(p.ownerOf(s, 'meta://hidden', yes)).toBeUndefined();
  });

  it('keeps the latest carrier, per session, for the methods whose results are a server\'s words only', () => {
    const p = new UriProvenance();
    const [s, t] = [session(), session()];
    p.learn(s, 'a', 'tools/call', { content: [{ type: 'text', text: 'x://1' }] });
    p.learn(s, 'b', 'prompts/get', { messages: [{ role: 'user', content: { type: 'text', text: 'x://1' } }] });
    p.learn(s, 'c', 'tools/list', { tools: [{ name: 'x://1' }] });
    expect(p.ownerOf(s, 'x://1', yes)).toBe('b');
    expect(p.ownerOf(t, 'x://1', yes)).toBeUndefined();
    expect(p.ownerOf(s, 'x://1', (upstream) => upstream !== 'b')).toBeUndefined();
  });
});
