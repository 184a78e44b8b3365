// The secret values a config holds, for the log redactor: every upstream header value (and
// the credential inside a "Bearer ..." value), every stdio env value, every client secret, and
// every value ${VAR} put into a secret-bearing place (below), whatever its length.
import type { Secret } from '../util/redact.js';
import { substitutionsOf } from './load.js';
import type { Config } from './schema.js';

/**
 * Key paths whose substituted values are secrets ("*" is any one key): credentials travel in
 * headers, client secrets and child environments, and inside URLs (userinfo, query keys).
 */
const SECRET_BEARING: readonly (readonly string[])[] = [
  ['upstreams', '*', 'http', 'url'],
  ['upstreams', '*', 'http', 'headers', '*'],
  ['upstreams', '*', 'http', 'oauth', 'clientSecret'],
  ['upstreams', '*', 'stdio', 'env', '*'],
  ['rateLimits', 'store', 'redis', 'url'],
  ['sessions', 'keys', '*'],
  ['upstreams', '*', 'http', 'userAuth', 'clientSecret'],
  ['auth', 'oauth', 'login', 'clientSecret'],
  ['credentials', 'key'],
  ['credentials', 'key', '*'],
  ['credentials', 'store', 'redis', 'url'],
  ['sessions', 'store', 'redis', 'url'],
  ['upstreams', '*', 'http', 'tokenExchange', 'client', 'clientSecret'],
];

function secretBearing(path: readonly (string | number)[]): boolean {
  return SECRET_BEARING.some((pattern) => pattern.length === path.length && pattern.every((part, i) => part === '*' || part === path[i]));
}

export function secretsOf(config: Config): Secret[] {
  const secrets: Secret[] = [];
  for (const upstream of Object.values(config.upstreams)) {
    for (const value of Object.values(upstream.http?.headers ?? {})) {
      secrets.push(value);
      const credential = /^\s*\S+\s+(\S+)\s*$/.exec(value)?.[1];
      if (credential) secrets.push(credential);
    }
    for (const value of Object.values(upstream.stdio?.env ?? {})) secrets.push(value);
  }
  secrets.push(...(config.sessions.keys ?? []));
  for (const upstream of Object.values(config.upstreams)) if (upstream.http?.oauth) secrets.push(upstream.http.oauth.clientSecret);
  for (const upstream of Object.values(config.upstreams)) if (upstream.http?.userAuth?.type === 'oauth' && upstream.http.userAuth.clientSecret) secrets.push(upstream.http.userAuth.clientSecret);
  for (const upstream of Object.values(config.upstreams)) {
    const client = upstream.http?.tokenExchange?.client;
    if (typeof client === 'object') secrets.push(client.clientSecret);
  }
  if (config.auth?.oauth?.login?.clientSecret) secrets.push(config.auth.oauth.login.clientSecret);
  secrets.push(...(config.credentials?.key ?? []));
  for (const { path, value } of substitutionsOf(config)) if (value !== '' && secretBearing(path)) secrets.push({ value, fromEnv: true });
  return secrets;
}
