// Token exchange built from the config: the subjects the authenticator feeds, and the exchanger
// the links use for every `tokenExchange` upstream. Nothing is built when no upstream has one.
import type { Config } from '../config/schema.js';
import type { Logger } from '../util/log.js';
import type { CredentialStore } from './store.js';
import { ClientSubjectTokens, type FrontDoorSubjects } from './subject-tokens.js';
import { TokenExchanger, type TokenExchangeDeps } from './token-exchange.js';

export interface TokenExchangeSetup {
  logger: Logger;
  /** The credential store: exchanged tokens are shared through it when it is Redis. */
  open?: () => Promise<CredentialStore>;
  onSecret?: (secret: string) => void;
  onExchange?: TokenExchangeDeps['onExchange'];
  /** The front door's kept IdP sessions, once it offers them. */
  frontDoor?: FrontDoorSubjects;
}

export interface TokenExchange {
  exchanger: TokenExchanger;
  subjects: ClientSubjectTokens;
}

/**
 * Built whenever the IdP is configured (auth.oauth needs a restart to change), so a reload may add
 * a tokenExchange upstream; `current` is read at each exchange, so a reload's settings apply to
 * the next one. Subject tokens are kept only while some upstream exchanges them.
 */
export function createTokenExchange(current: () => Config, setup: TokenExchangeSetup): TokenExchange | undefined {
  const config = current();
  const oauth = config.auth?.oauth;
  if (!oauth) return undefined;
  let seen: { config: Config; wanted: boolean } | undefined;
  const wanted = (): boolean => {
    const now = current();
    if (seen?.config !== now) seen = { config: now, wanted: Object.values(now.upstreams).some((entry) => entry.http?.tokenExchange) };
    return seen.wanted;
  };
  const subjects = new ClientSubjectTokens({ wanted, ...(setup.frontDoor ? { frontDoor: setup.frontDoor } : {}) });
  const shared = typeof config.credentials?.store === 'object' && 'redis' in config.credentials.store;
  const exchanger = new TokenExchanger({
    issuer: oauth.issuer,
    login: oauth.login,
    config: (upstream) => current().upstreams[upstream]?.http?.tokenExchange,
    subjects,
    ...(shared && setup.open ? { store: setup.open } : {}),
    logger: setup.logger.child({ part: 'token-exchange' }),
    ...(setup.onSecret ? { onSecret: setup.onSecret } : {}),
    ...(setup.onExchange ? { onExchange: setup.onExchange } : {}),
  });
  return { exchanger, subjects };
}
