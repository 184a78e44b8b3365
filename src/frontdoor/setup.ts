// Builds the front door from the config when auth.oauth.frontDoor is set, on the gateway's one
// credential store (opened at the start, shared with per-user credentials and pins), with its
// metrics counted, and its registrations and new sign-ins counted where rateLimits.store says
// (Redis: every replica together) in buckets of its own, so they never crowd out the principals' buckets.
import type { SecurityEvents } from '../audit/events.js';
import type { Config } from '../config/schema.js';
import type { CredentialStore } from '../credentials/store.js';
import { waitingStore } from '../credentials/opener.js';
import type { Metrics } from '../metrics/metrics.js';
import { MemoryBucketStore, type BucketStore } from '../ratelimit/memory-store.js';
import { RedisBucketStore } from '../ratelimit/redis-store.js';
import type { Logger } from '../util/log.js';
import { FrontDoor, REGISTRATION_BUCKETS } from './front-door.js';

export interface FrontDoorSetup {
  logger: Logger;
  metrics: Metrics;
  /** Where sign-ins and tokens issued or refused become audit records and spans. */
  events: SecurityEvents;
  /** The gateway's credential store, opened on first use. */
  open: () => Promise<CredentialStore>;
  /** Extra CA certificates (PEM) trusted when fetching client metadata documents (tests). */
  ca?: string;
}

export function createFrontDoor(config: Config, setup: FrontDoorSetup): FrontDoor | undefined {
  if (!config.auth?.oauth?.frontDoor) return undefined;
  const { metrics } = setup;
  const frontDoor = new FrontDoor({
    config,
    store: waitingStore(setup.open),
    logger: setup.logger,
    events: setup.events,
    onAuthorization: (outcome) => metrics.oauthAuthorizations.inc({ outcome }),
    onToken: (grantType, outcome) => metrics.oauthTokens.inc({ grant_type: grantType, outcome }),
    ...(setup.ca ? { ca: setup.ca } : {}),
    limits: registrationLimits(config, setup.logger),
  });
  metrics.observeOauthClients(() => frontDoor.clientCounts());
  return frontDoor;
}

/** The rate limiter's kind of store (rateLimits.store), for DCR registrations and new sign-ins. */
function registrationLimits(config: Config, logger: Logger): BucketStore {
  const store = config.rateLimits?.store;
  if (typeof store === 'object') return new RedisBucketStore({ url: store.redis.url, prefix: store.redis.prefix, maxBuckets: REGISTRATION_BUCKETS, logger: logger.child({ buckets: 'frontdoor registrations' }) });
  return new MemoryBucketStore(REGISTRATION_BUCKETS);
}
