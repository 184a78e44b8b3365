// The one credential store of a gateway, opened on first use and shared by everything kept in it
// (per-user credentials, pins): a file store is one process's, so two stores on one file would
// overwrite each other's entries.
import type { Config } from '../config/schema.js';
import type { Logger } from '../util/log.js';
import { openCredentialStore, type CredentialStore } from './store.js';

export interface StoreOpener {
  /** The store, opened (and its key checked) on the first call. */
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
  let opened: Promise<CredentialStore> | undefined;
  return {
    open: () => (opened ??= openCredentialStore(storeConfig, key, logger)),
    where: storeConfig === 'memory' ? 'memory' : 'file' in storeConfig ? storeConfig.file.path : `redis (prefix ${storeConfig.redis.prefix})`,
    close: async () => {
      if (opened) await (await opened.catch(() => undefined))?.close();
    },
  };
}

/**
 * The store's methods, each waiting for it to be open: parts built before the gateway starts
 * (per-user credentials, the front door, pins) hold this and never wait for the opening
 * themselves; a subscription waits too (nothing is missed after the store opens). Its `close`
 * does nothing: the store's opener closes it.
 */
export function waitingStore(open: () => Promise<CredentialStore>): CredentialStore {
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
    close: async () => {},
  };
}
