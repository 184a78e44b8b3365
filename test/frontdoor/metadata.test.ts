// The front door's authorization server metadata claims Client ID Metadata Documents only when
// cimd.allow lets one in: hosts that prefer CIMD (MCP authorization, "Client Registration
// Approaches") read the flag and fall back to DCR only without it. And its grants end at
// frontDoor.grantMaxAge, as the config says.
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { FrontDoor } from '../../src/frontdoor/front-door.js';
import type { AppEnv } from '../../src/http/app.js';
import { mountFrontDoor } from '../../src/http/front-door.js';
import { silentLogger } from '../../src/util/log.js';

const KEY = 'metadata-unit-test-credentials-key-of-forty-chars';
const ISSUER = 'https://mcp.example';

const opened: Array<{ store: CredentialStore; frontDoor: FrontDoor }> = [];

afterEach(async () => {
  for (const { store, frontDoor } of opened.splice(0)) {
    await frontDoor.close();
    await store.close();
  }
});

/** The metadata documents as hosts fetch them, from a front door with these settings. */
async function metadataOf(frontDoor: Record<string, unknown>): Promise<Array<Record<string, unknown>>> {
  const store = await openCredentialStore('memory', [KEY]);
  const config = configSchema.parse({
    listen: { publicUrl: `${ISSUER}/mcp` },
    auth: { oauth: { issuer: 'https://login.example/', jwksUri: 'https://login.example/keys', login: { clientId: 'switchyard' }, frontDoor } },
    credentials: { key: KEY },
    upstreams: {},
  });
  const door = new FrontDoor({ config, store, logger: silentLogger });
  opened.push({ store, frontDoor: door });
  const app = new Hono<AppEnv>();
  mountFrontDoor(app, door);
  const documents: Array<Record<string, unknown>> = [];
  for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration', '/.well-known/oauth-authorization-server/mcp', '/mcp/.well-known/openid-configuration']) {
    const response = await app.request(`${ISSUER}${path}`);
    expect(response.status, path).toBe(200);
    documents.push((await response.json()) as Record<string, unknown>);
  }
  return documents;
}

describe("the front door's metadata", () => {
  it('with the default cimd.allow (empty) does not claim CIMD, and offers DCR', async () => {
    for (const metadata of await metadataOf({})) {
      expect(metadata).not.toHaveProperty('client_id_metadata_document_supported');
      expect(metadata.registration_endpoint).toBe(`${ISSUER}/oauth/register`);
    }
  });

  it('claims CIMD once cimd.allow names a host', async () => {
    for (const metadata of await metadataOf({ cimd: { allow: ['claude.ai'] } })) expect(metadata.client_id_metadata_document_supported).toBe(true);
    for (const metadata of await metadataOf({ cimd: { allow: ['*'] }, dcr: false })) {
      expect(metadata.client_id_metadata_document_supported).toBe(true);
      expect(metadata).not.toHaveProperty('registration_endpoint');
    }
  });
});

describe('the front door built from the config', () => {
  it("ends its grants at frontDoor.grantMaxAge after the sign-in, however long refreshTtl is", async () => {
    const store = await openCredentialStore('memory', [KEY]);
    const config = configSchema.parse({
      listen: { publicUrl: `${ISSUER}/mcp` },
      auth: { oauth: { issuer: 'https://login.example/', jwksUri: 'https://login.example/keys', login: { clientId: 'switchyard' }, frontDoor: { refreshTtl: '30d', grantMaxAge: '2h' } } },
      credentials: { key: KEY },
      upstreams: {},
    });
    const door = new FrontDoor({ config, store, logger: silentLogger });
    opened.push({ store, frontDoor: door });
    const record = { clientId: 'dcr_c', redirectUri: 'http://127.0.0.1/cb', challenge: 'c', resource: `${ISSUER}/mcp`, scope: '', identity: { principal: 'https://login.example/|alice', subject: 'alice', claims: {} } };
    const code = await door.grants.issueCode(record as never);
    const redeemed = await door.grants.redeemCode(code);
    if (!redeemed || redeemed === 'reused') throw new Error('the code did not redeem');
    const made = await door.grants.createGrant(code, redeemed);
    if (made === 'reused') throw new Error('the grant was refused');
    expect(made.grant.expiresAt! - made.grant.signedInAt!).toBe(2 * 3_600_000);
  });
});
