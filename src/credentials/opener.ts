// The one credential store of a gateway, opened on first use and shared by everything kept in it
// (per-user credentials, pins): a file store is one process's, so two stores on one file would
// overwrite each other's entries.
import type { Config } from '../config/schema.js';
import type { Logger } from '../util/log.js';
import { openCredentialStore, type CredentialStore } from './store.js';

export interface StoreOpener {
  /**
   * The store, opened (and its key checked) on the first call. An opening that failed (Redis
   * down, the key check unreadable) is tried again by the next call, one attempt at a time.
   */
  open(): Promise<CredentialStore>;
  /** Where it is, for messages. */
  readonly where: string;
  close(): Promise<void>;
}

/** The configured `credentials.store`, or undefined without a `credentials` block. */
export function credentialStoreOpener(config: Config, logger: Logger, resolvePath: (path: string) => string = (path) => path): StoreOpener | undefined {
  if (!config.credentials) return undefined;
  const { key, store: settings } = config.credentials;
  const storeConfig = typeof settings === 'object' && 'file' in settings ? { file: { path: resolvePath(settings.file.path) } } : settings;
  const opening = openingOnce(() => openCredentialStore(storeConfig, key, logger));
  return {
    open: opening.open,
    where: storeConfig === 'memory' ? 'memory' : 'file' in storeConfig ? storeConfig.file.path : `redis (prefix ${storeConfig.redis.prefix})`,
    close: async () => {
      const store = await opening.close();
      await store?.close();
    },
  };
}

/**
 * `open` called once and its store shared; a failed opening is not kept: the next call tries
 * again (callers waiting meanwhile share the attempt in flight). After `close`, nothing opens.
 */
export function openingOnce<T>(open: () => Promise<T>): { open(): Promise<T>; close(): Promise<T | undefined> } {
  let opened: Promise<T> | undefined;
  let closed = false;
  return {
    open() {
      if (closed) return Promise.reject(new Error('the credential store is closed'));
      if (opened) return opened;
      const attempt = open();
      opened = attempt;
      attempt.catch(() => {
        if (opened === attempt) opened = undefined;
      });
      return attempt;
    },
    async close() {
      closed = true;
      return opened?.catch(() => undefined);
    },
  };
}

/**
 * The store's methods, each waiting for it to be open: parts built before the gateway starts
 * (per-user credentials, the front door, pins) hold this and never wait for the opening
 * themselves; a subscription waits too (nothing is missed after the store opens), and one whose
 * opening failed is made by the next use of the store that opens it. Its `close` does nothing:
 * the store's opener closes it.
 */
export function waitingStore(open: () => Promise<CredentialStore>): CredentialStore {
  /** Subscriptions not yet made on the store (its opening failed so far). */
  const unmade = new Set<(store: CredentialStore) => void>();
  const opened = async (): Promise<CredentialStore> => {
    const store = await open();
    for (const make of [...unmade]) make(store);
    return store;
  };
  return {
    get: async (key) => (await opened()).get(key),
    set: async (key, value, ttlMs) => (await opened()).set(key, value, ttlMs),
    delete: async (key) => (await opened()).delete(key),
    setIfAbsent: async (key, value, ttlMs) => (await opened()).setIfAbsent(key, value, ttlMs),
    count: async (prefix) => (await opened()).count(prefix),
    withLock: async (key, ttlMs, fn, waitMs) => (await opened()).withLock(key, ttlMs, fn, waitMs),
    publish: async (channel, message) => (await opened()).publish(channel, message),
    subscribe: (channel, listener) => {
      let stop: (() => void) | undefined;
      const make = (store: CredentialStore): void => {
        if (!unmade.delete(make)) return; // made already, or stopped
        stop = store.subscribe(channel, listener);
      };
      unmade.add(make);
      void opened().then(make, () => {});
      return () => {
        unmade.delete(make);
        stop?.();
      };
    },
    close: async () => {},
  };
}
