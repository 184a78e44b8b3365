// Who is calling: established by a verified access token or an API key, then carried with the
// request (and bound to the sessions it opens).

export interface Principal {
  /** Stable identity: `<issuer>|<sub>` for tokens, `apikey:<id>` for API keys. */
  id: string;
  kind: 'oauth' | 'apikey';
  /** Scopes granted (the token's `scope`/`scp`, or the API key's configured scopes). */
  scopes: readonly string[];
  /** Token claims (for team rules); empty for API keys. */
  claims: Readonly<Record<string, unknown>>;
  /** The team an API key is mapped to, when configured. */
  team?: string;
}

/** Why a request was refused: the label of switchyard_auth_failures_total. */
export type AuthFailureReason =
  | 'missing'
  | 'query_token'
  | 'malformed'
  | 'expired'
  | 'not_yet_valid'
  | 'issuer'
  | 'audience'
  | 'algorithm'
  | 'signature'
  | 'unknown_key'
  | 'claims'
  | 'jwks_unavailable'
  | 'unknown_api_key'
  | 'insufficient_scope';

export class AuthError extends Error {
  override readonly name = 'AuthError';
  constructor(
    readonly reason: AuthFailureReason,
    message: string,
  ) {
    super(message);
  }
}
