// Builds the per-user credential parts from the config: the sealed store (opened at start, so a
// wrong key fails the start), the credentials, the IdP login and the connect flows. Nothing is
// made when no upstream has `userAuth`.
import type { Config } from '../config/schema.js';
import type { Logger } from '../util/log.js';
import { ConnectFlows } from './connect-flow.js';
import { IdpLogin } from './login.js';
import { Sealer } from './sealed.js';
import { openCredentialStore, type CredentialStore } from './store.js';
import { UserCredentials } from './user-credentials.js';
import { waitingStore } from './opener.js';

export interface UserAuthParts {
  credentials: UserCredentials;
  flows: ConnectFlows;
  connectTtlMs: number;
  /** Opens the store (checking the key); the start waits for it. */
  ready(): Promise<void>;
  /** Principals with a credential, per personal upstream (no names). */
  counts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export interface UserAuthDeps {
  logger: Logger;
  /** The origin connect URLs are made under (publicUrl's, else the listener's once it listens). */
  base: () => string;
  /** Relative store paths are resolved against the config file's directory. */
  resolvePath?: (path: string) => string;
  onSecret?: (secret: string) => void;
  onSignIn?: (upstream: string, outcome: string) => void;
  onRefresh?: (upstream: string, outcome: string) => void;
  /** The gateway's one credential store (opener.ts), shared with pins; its owner closes it. */
  open?: () => Promise<CredentialStore>;
}

export function createUserAuth(config: Config, deps: UserAuthDeps): UserAuthParts | undefined {
  const personal = () => new Map(Object.entries(config.upstreams).flatMap(([name, entry]) => (entry.http?.userAuth ? [[name, { url: entry.http.url, userAuth: entry.http.userAuth }] as const] : [])));
  if (personal().size === 0 || !config.credentials) return undefined;
  const { key, connectTtl } = config.credentials;
  const settings = config.credentials.store;
  const storeConfig = typeof settings === 'object' && 'file' in settings ? { file: { path: deps.resolvePath?.(settings.file.path) ?? settings.file.path } } : settings;
  let opened: Promise<CredentialStore> | undefined;
  const open = deps.open ?? ((): Promise<CredentialStore> => (opened ??= openCredentialStore(storeConfig, key, deps.logger)));
  const store = waitingStore(open);
  const sealer = new Sealer(key);
  const upstreams = personal();
  const oauth = config.auth?.oauth;
  const credentials = new UserCredentials({
    store,
    upstreams: () => upstreams,
    logger: deps.logger,
    redirectUri: () => `${deps.base()}/connect/callback`,
    metadataUrl: (upstream) => (deps.base().startsWith('https:') ? `${deps.base()}/connect/client/${upstream}.json` : undefined),
    ...(deps.onSecret ? { onSecret: deps.onSecret } : {}),
    ...(deps.onRefresh ? { onRefresh: deps.onRefresh } : {}),
  });
  const login = oauth ? new IdpLogin({ issuer: oauth.issuer, principalClaim: oauth.principalClaim, config: oauth.login, redirectUri: () => `${deps.base()}/connect/login`, store }) : undefined;
  const flows = new ConnectFlows({ store, sealer, credentials, login, base: deps.base, ttlMs: connectTtl, logger: deps.logger, ...(deps.onSignIn ? { onSignIn: deps.onSignIn } : {}) });
  return {
    credentials,
    flows,
    connectTtlMs: connectTtl,
    ready: async () => void (await open()),
    counts: async () => Object.fromEntries(await Promise.all([...upstreams.keys()].map(async (name) => [name, await credentials.count(name)] as const))),
    close: async () => {
      credentials.close();
      if (opened) await (await opened.catch(() => undefined))?.close();
    },
  };
}
