// Builds the front door from the config when auth.oauth.frontDoor is set, on the gateway's one
// credential store (opened at the start, shared with per-user credentials and pins), with its
// metrics counted.
import type { SecurityEvents } from '../audit/events.js';
import type { Config } from '../config/schema.js';
import type { CredentialStore } from '../credentials/store.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../util/log.js';
import { FrontDoor } from './front-door.js';

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
  });
  metrics.observeOauthClients(() => frontDoor.clientCounts());
  return frontDoor;
}

/** The store's methods, each waiting for it to be open (the front door is built before the start opens it). */
function waitingStore(open: () => Promise<CredentialStore>): CredentialStore {
  return {
    get: async (key) => (await open()).get(key),
    set: async (key, value, ttlMs) => (await open()).set(key, value, ttlMs),
    delete: async (key) => (await open()).delete(key),
    setIfAbsent: async (key, value, ttlMs) => (await open()).setIfAbsent(key, value, ttlMs),
    count: async (prefix) => (await open()).count(prefix),
    withLock: async (key, ttlMs, fn, waitMs) => (await open()).withLock(key, ttlMs, fn, waitMs),
    publish: async (channel, message) => (await open()).publish(channel, message),
    subscribe: (channel, listener) => {
      let stopped = false;
      let stop: (() => void) | undefined;
      void open().then(
        (store) => {
          if (!stopped) stop = store.subscribe(channel, listener);
        },
        () => {},
      );
      return () => {
        stopped = true;
        stop?.();
      };
    },
    // The gateway closes the store it opened.
    close: async () => {},
  };
}
