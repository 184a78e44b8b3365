// The front door's pure rules: redirect URI matching (RFC 8252 §7.3 loopback ports), which
// redirect URIs a DCR client may register, CIMD URL shapes and allowed hosts, PKCE S256.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REDIRECTS } from '../../src/config/front-door-schema.js';
import { cimdUrlRefusal, hostAllowed, pkceMatches, redirectMatches, redirectRefusal } from '../../src/frontdoor/rules.js';

describe('redirect URI matching', () => {
  it('matches exactly, and a loopback IP redirect on any port (RFC 8252 §7.3)', () => {
    expect(redirectMatches('https://app.example/cb', ['https://app.example/cb'])).toBe(true);
    expect(redirectMatches('http://127.0.0.1:53111/callback', ['http://127.0.0.1/callback'])).toBe(true);
    expect(redirectMatches('http://127.0.0.1:53111/callback', ['http://127.0.0.1:3000/callback'])).toBe(true);
    expect(redirectMatches('http://localhost:9/cb', ['http://localhost:3000/cb'])).toBe(true);
    expect(redirectMatches('http://[::1]:9/cb', ['http://[::1]/cb'])).toBe(true);
  });

  it('refuses anything else: another path, host, scheme, query, a port on a non-loopback host', () => {
    expect(redirectMatches('https://app.example/cb/x', ['https://app.example/cb'])).toBe(false);
    expect(redirectMatches('https://app.example:444/cb', ['https://app.example/cb'])).toBe(false);
    expect(redirectMatches('http://127.0.0.1:5/other', ['http://127.0.0.1/callback'])).toBe(false);
    expect(redirectMatches('http://localhost:5/cb', ['http://127.0.0.1/cb'])).toBe(false);
    expect(redirectMatches('http://127.0.0.1:5/cb?x=1', ['http://127.0.0.1/cb'])).toBe(false);
    expect(redirectMatches('https://127.0.0.1:5/cb', ['https://127.0.0.1/cb'])).toBe(false);
    expect(redirectMatches('http://127.0.0.1:5/cb#f', ['http://127.0.0.1/cb'])).toBe(false);
  });
});

describe('redirect URIs a DCR client may register (the default `redirects`)', () => {
  it('allows https, loopback http on any port, cursor:// and vscode://', () => {
    for (const uri of ['https://app.example/cb', 'http://127.0.0.1:1234/cb', 'http://localhost/cb', 'cursor://anysphere.cursor-mcp/oauth/callback', 'vscode://vscode.github-authentication/did-authenticate']) {
      expect(redirectRefusal(uri, DEFAULT_REDIRECTS), uri).toBeUndefined();
    }
  });

  it('refuses plain http elsewhere, other schemes, fragments, user information, script schemes', () => {
    for (const uri of ['http://app.example/cb', 'myapp://cb', 'https://app.example/cb#x', 'https://user:pw@app.example/cb', 'javascript:alert(1)', 'data:text/html,x', 'not a uri']) {
      expect(redirectRefusal(uri, DEFAULT_REDIRECTS), uri).toBeDefined();
    }
  });

  it('reads a plain pattern as a prefix that ends at a boundary', () => {
    expect(redirectRefusal('https://app.example/cb', ['https://app.example'])).toBeUndefined();
    expect(redirectRefusal('https://app.example.attacker.test/cb', ['https://app.example'])).toBeDefined();
    expect(redirectRefusal('https://app.example/oauth/cb', ['https://app.example/oauth/'])).toBeUndefined();
  });
});

describe('Client ID Metadata Document URLs', () => {
  it('accepts an https URL with a path', () => {
    expect(cimdUrlRefusal('https://claude.ai/oauth/mcp-oauth-client-metadata')).toBeUndefined();
  });

  it('refuses http, no path, user information, a fragment, dot segments, a non-normal form', () => {
    expect(cimdUrlRefusal('http://claude.ai/client.json')).toMatch(/https/);
    expect(cimdUrlRefusal('https://claude.ai/')).toMatch(/path/);
    expect(cimdUrlRefusal('https://claude.ai')).toMatch(/path/);
    expect(cimdUrlRefusal('https://u:p@claude.ai/client.json')).toMatch(/user information/);
    expect(cimdUrlRefusal('https://claude.ai/client.json#x')).toMatch(/fragment/);
    expect(cimdUrlRefusal('https://claude.ai/a/../client.json')).toMatch(/dot path segments/);
    expect(cimdUrlRefusal('https://claude.ai/a/%2e%2E/client.json')).toMatch(/dot path segments/);
    expect(cimdUrlRefusal('https://claude.ai/./client.json')).toMatch(/dot path segments/);
    expect(cimdUrlRefusal('https://CLAUDE.ai/client.json')).toMatch(/normal form/);
  });

  it('allows hosts by exact name, by "*.domain" (subdomains only) or "*"', () => {
    expect(hostAllowed('claude.ai', ['claude.ai'])).toBe(true);
    expect(hostAllowed('evilclaude.ai', ['claude.ai'])).toBe(false);
    expect(hostAllowed('api.anthropic.com', ['*.anthropic.com'])).toBe(true);
    expect(hostAllowed('anthropic.com', ['*.anthropic.com'])).toBe(false);
    expect(hostAllowed('xanthropic.com', ['*.anthropic.com'])).toBe(false);
    expect(hostAllowed('anything.example', ['*'])).toBe(true);
    expect(hostAllowed('claude.ai', [])).toBe(false);
  });
});

describe('PKCE S256 (RFC 7636)', () => {
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  it('matches the RFC 7636 appendix B example', () => {
    expect(challenge).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    expect(pkceMatches(verifier, challenge)).toBe(true);
  });

  it('refuses another verifier, a short one, and a plain challenge', () => {
    expect(pkceMatches(`${verifier.slice(0, -1)}A`, challenge)).toBe(false);
    expect(pkceMatches('short', challenge)).toBe(false);
    expect(pkceMatches(verifier, verifier)).toBe(false);
  });
});
