// The secret values a config holds, for the log redactor: every upstream header value (and
// the credential inside a "Bearer ..." value), every stdio env value, every client secret.
import type { Config } from './schema.js';

export function secretsOf(config: Config): string[] {
  const secrets: string[] = [];
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
  return secrets;
}
