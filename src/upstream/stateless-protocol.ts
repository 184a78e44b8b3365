// What the upstream client needs to call a 2026-07-28 server: discovery (and telling a
// sessions-era server apart), the `_meta` envelope every request carries, and the shape of
// multi round-trip results (spec/2026-07-28: basic/versioning.mdx, server/discover.mdx,
// basic/patterns/mrtr.mdx).
import { META, STATELESS_VERSION, StatelessErrorCode, isStatelessVersion } from '../mcp/era.js';
import { GatewayError, RpcError } from '../mcp/errors.js';
import { isObject, metaOf, type JsonObject, type JsonRpcId } from '../mcp/jsonrpc.js';
import { TransportError } from '../transport/types.js';
import { Cancellation, type CancelSignal } from '../util/cancel.js';
import { listChanges } from '../mcp/methods.js';

/** The era an upstream speaks, as the config names them. */
export type UpstreamEra = 'stateless' | 'sessions';

/**
 * What is known of an upstream's eras: whether it answers server/discover (`stateless`) and whether
 * it answers initialize (`sessions`); unknown until a connection finds out. A dual-era server
 * answers both (versioning.mdx "Backward Compatibility"), and its discovery result cannot say so
 * (it lists only 2026-07-28 versions), so only an initialize tried tells.
 */
export interface EraFacts {
  stateless?: boolean;
  sessions?: boolean;
}

/** How one connection picks its era: the client's own where the upstream speaks it, else the other. */
export interface EraChoice {
  /** The era of the client the upstream session serves. */
  prefer: UpstreamEra;
  known: Readonly<EraFacts>;
  /** Hears what the connection found out. */
  learn?: (facts: EraFacts) => void;
}

/** A connection to a server known to speak only the sessions era: no probe. */
export const SESSIONS_ONLY: EraChoice = { prefer: 'sessions', known: { stateless: false, sessions: true } };

/** Whether an answer to initialize says the server does not speak the sessions era at all: it answered, and refused. */
export function refusesInitialize(err: unknown): boolean {
  if (err instanceof GatewayError && err.cause instanceof TransportError) err = err.cause;
  if (err instanceof RpcError) return true;
  return err instanceof TransportError && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 401 && err.status !== 403 && err.status !== 404;
}

/** What the client session says about itself on every request to a 2026-07-28 server. */
export interface Envelope {
  clientCapabilities: JsonObject;
  clientInfo: JsonObject;
  /** The level the client asked for (logging/setLevel, or its own `_meta` logLevel). */
  logLevel?: string;
}

/**
 * The per-request protocol fields of `_meta` (basic/index.mdx "Per-request protocol fields"):
 * what the gateway states for the client session, never what a client's request says there.
 */
const ENVELOPE_KEYS: readonly string[] = [META.protocolVersion, META.clientInfo, META.clientCapabilities, META.logLevel];

/**
 * A client's request params without the per-request protocol fields in its `_meta` (the rest of
 * `_meta`, progressToken and trace context and an app's own keys, kept); the same object when it
 * has none. The router takes every client request through this before anything of the gateway
 * adds its own (a Tasks declaration), so what withEnvelope finds under those keys is the gateway's.
 */
export function withoutEnvelopeFields<P extends JsonObject | undefined>(params: P): P {
  const meta = metaOf(params);
  if (!meta || !ENVELOPE_KEYS.some((key) => key in meta)) return params;
  const rest: JsonObject = {};
  for (const [key, value] of Object.entries(meta)) if (!ENVELOPE_KEYS.includes(key)) rest[key] = value;
  const { _meta: _dropped, ...bare } = params!;
  return (Object.keys(rest).length === 0 ? bare : { ...bare, _meta: rest }) as P;
}

/**
 * Params with the session's envelope in `_meta`: its version, client info and log level always,
 * and its capabilities unless the gateway declared others for this one request (the Tasks
 * extension, when it runs a task for a client that knows none). A client's own values under
 * these keys never get here (withoutEnvelopeFields, at the router).
 */
export function withEnvelope(params: JsonObject | undefined, envelope: Envelope): JsonObject {
  const { [META.protocolVersion]: _version, [META.clientInfo]: _info, [META.logLevel]: _level, [META.clientCapabilities]: declared, ...rest } = metaOf(params) ?? {};
  const meta: JsonObject = {
    ...rest,
    [META.protocolVersion]: STATELESS_VERSION,
    [META.clientCapabilities]: isObject(declared) ? declared : envelope.clientCapabilities,
    [META.clientInfo]: envelope.clientInfo,
  };
  if (envelope.logLevel !== undefined) meta[META.logLevel] = envelope.logLevel;
  return { ...params, _meta: meta };
}

/**
 * What a server/discover probe says about the server's era (versioning.mdx "Backward
 * Compatibility"): a DiscoverResult offering 2026-07-28 is stateless; any other answer the server
 * gave (a JSON-RPC error, an HTTP 4xx, silence) is a sessions-era server. A refused credential
 * or a server or network failure is no answer: the error is returned to fail the connection.
 */
export function eraFromProbe(outcome: JsonObject | Error): UpstreamEra | Error {
  if (!(outcome instanceof Error)) {
    const versions = outcome.supportedVersions;
    if (Array.isArray(versions) && versions.includes(STATELESS_VERSION)) return 'stateless';
    if (Array.isArray(versions) && versions.some(isStatelessVersion)) return new Error(`the upstream offers no protocol version the gateway speaks (${versions.join(', ')})`);
    return 'sessions';
  }
  if (outcome instanceof RpcError) {
    if (outcome.error.code !== StatelessErrorCode.UnsupportedProtocolVersion) return 'sessions';
    const data = outcome.error.data;
    const supported = isObject(data) && Array.isArray(data.supported) ? data.supported : [];
    return supported.some(isStatelessVersion) ? new Error(`the upstream does not accept ${STATELESS_VERSION} (it offers ${supported.join(', ')})`) : 'sessions';
  }
  if (outcome instanceof TransportError) {
    const status = outcome.status;
    if (status === 401 || status === 403) return outcome;
    if (status !== undefined && status >= 400 && status < 500) return 'sessions';
    return outcome;
  }
  // The probe timed out (a stdio server that ignores unknown requests before initialize).
  return 'sessions';
}

/** The discovery result in the shape the rest of the gateway knows from initialize. */
export function initFromDiscover(result: JsonObject): { protocolVersion: string; capabilities: JsonObject; serverInfo: JsonObject; instructions?: string } {
  const info = metaOf(result)?.[META.serverInfo];
  const serverInfo = isObject(info) ? info : {};
  const init: { protocolVersion: string; capabilities: JsonObject; serverInfo: JsonObject; instructions?: string } = {
    protocolVersion: STATELESS_VERSION,
    capabilities: isObject(result.capabilities) ? result.capabilities : {},
    serverInfo,
  };
  if (typeof result.instructions === 'string') init.instructions = result.instructions;
  return init;
}

/**
 * A 2026-07-28 result as the gateway's core handles results: the wire-only fields dropped
 * (resultType "complete", caching hints, serverInfo, a subscription id). The downstream side
 * adds its own for clients of that era.
 */
export function withoutWireFields(result: JsonObject): JsonObject {
  const { resultType, ttlMs, cacheScope: _scope, ...plain } = result;
  // A task (the Tasks extension, SEP-2663) keeps its own ttlMs, and a created one its "task" discriminator.
  const task = typeof result.taskId === 'string';
  const rest: JsonObject = task ? { ...plain, ...(ttlMs !== undefined ? { ttlMs } : {}), ...(resultType === 'task' ? { resultType } : {}) } : plain;
  const meta = metaOf(rest);
  if (!meta || !(META.serverInfo in meta || META.subscriptionId in meta)) return rest;
  const { [META.serverInfo]: _info, [META.subscriptionId]: _sub, ...others } = meta;
  if (Object.keys(others).length === 0) {
    const { _meta: _dropped, ...bare } = rest;
    return bare;
  }
  return { ...rest, _meta: others };
}

/** The requests an input_required result asks the client to fulfil, by the server's keys. */
export function inputRequestsOf(result: JsonObject): { key: string; method: string; params: JsonObject | undefined }[] | undefined {
  if (result.resultType !== 'input_required') return undefined;
  const requests = isObject(result.inputRequests) ? result.inputRequests : {};
  const out: { key: string; method: string; params: JsonObject | undefined }[] = [];
  for (const [key, value] of Object.entries(requests)) {
    if (!isObject(value) || typeof value.method !== 'string') continue;
    out.push({ key, method: value.method, params: isObject(value.params) ? value.params : undefined });
  }
  return out;
}

/** Notification params without the upstream's subscription id (the client has its own, if any). */
export function withoutSubscriptionId(params: JsonObject | undefined): JsonObject | undefined {
  const meta = metaOf(params);
  if (!params || !meta || !(META.subscriptionId in meta)) return params;
  const { [META.subscriptionId]: _id, ...others } = meta;
  const { _meta: _dropped, ...rest } = params;
  return Object.keys(others).length === 0 ? rest : { ...rest, _meta: others };
}

/**
 * The pending request a notification belongs to by its subscription id (`pendingOf`: a request
 * still pending, by id), when that is a subscriptions/listen: on stdio every listen shares one
 * channel, and this id is all that tells them apart (subscriptions.mdx).
 */
export function listenNamedBy<P extends { readonly method: string }>(params: JsonObject | undefined, pendingOf: (id: JsonRpcId) => P | undefined): P | undefined {
  const id = metaOf(params)?.[META.subscriptionId];
  const pending = typeof id === 'string' || typeof id === 'number' ? pendingOf(id) : undefined;
  return pending?.method === 'subscriptions/listen' ? pending : undefined;
}

/** A server asking for input more often than this on one request is broken (or hostile). */
const MAX_INPUT_ROUNDS = 16;

/**
 * Drives a multi round-trip request to its end: while the server answers input_required, each
 * input request is asked of the client (`ask`: the same path a sessions-era server's own
 * elicitation, sampling or roots request takes) and the request is sent again (`next`) with
 * the answers and the server's requestState, unchanged. When `signal` aborts, it stops waiting
 * for the client at once (the caller withdraws what is still asked: the server holds nothing).
 */
export async function completeRounds(
  first: JsonObject,
  next: (inputResponses: JsonObject, requestState: string | undefined) => Promise<JsonObject>,
  ask: (method: string, params: JsonObject | undefined) => Promise<JsonObject>,
  signal?: CancelSignal,
): Promise<JsonObject> {
  let result = first;
  for (let round = 0; ; round++) {
    const requests = inputRequestsOf(result);
    if (!requests) return withoutWireFields(result);
    if (round >= MAX_INPUT_ROUNDS) throw new GatewayError('upstream_protocol', `the upstream asked for input ${MAX_INPUT_ROUNDS} times on one request`);
    if (requests.length === 0 && typeof result.requestState !== 'string') throw new GatewayError('upstream_protocol', 'the upstream answered input_required with neither inputRequests nor requestState');
    if (signal?.aborted) throw new GatewayError('cancelled', 'request cancelled');
    const responses: JsonObject = {};
    const answered = Promise.all(
      requests.map(async (request) => {
        responses[request.key] = await ask(request.method, request.params);
      }),
    );
    await (signal ? unlessAborted(answered, signal) : answered);
    result = await next(responses, typeof result.requestState === 'string' ? result.requestState : undefined);
  }
}

/** `work`'s outcome, or a cancellation as soon as `signal` aborts (`work` is left running). */
function unlessAborted<T>(work: Promise<T>, signal: CancelSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new GatewayError('cancelled', 'request cancelled'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Keeps one subscriptions/listen request open to a 2026-07-28 server for what the client
 * session needs (list changes the server announces, resources it subscribed to), opened again
 * at once when that changes and after a backoff when the server ends it.
 */
export class ChangeListener {
  readonly #open: (filter: JsonObject, cancel: Cancellation) => Promise<unknown>;
  readonly #filter: () => JsonObject | undefined;
  #current: Cancellation | undefined;
  #pause: Cancellation | undefined;
  #running = false;
  #closed = false;

  /** `open` sends the listen request and settles when it ends; `filter` is read at each (re)open. */
  constructor(open: (filter: JsonObject, cancel: Cancellation) => Promise<unknown>, filter: () => JsonObject | undefined) {
    this.#open = open;
    this.#filter = filter;
  }

  /** The filter changed (or listening should start): reopen now. */
  refresh(): void {
    if (this.#closed) return;
    if (!this.#running) {
      void this.#run();
      return;
    }
    this.#current?.abort('the filter changed');
    this.#pause?.abort();
  }

  close(): void {
    this.#closed = true;
    this.#current?.abort('closed');
    this.#pause?.abort();
  }

  async #run(): Promise<void> {
    this.#running = true;
    let delay = LISTEN_RETRY_MIN_MS;
    try {
      while (!this.#closed) {
        const filter = this.#filter();
        if (!filter) return;
        const cancel = new Cancellation();
        this.#current = cancel;
        const opened = Date.now();
        await this.#open(filter, cancel).catch(() => {});
        if (this.#closed) return;
        if (cancel.aborted) continue; // refreshed: the new filter goes out at once
        if (Date.now() - opened > LISTEN_RETRY_MAX_MS) delay = LISTEN_RETRY_MIN_MS;
        const pause = new Cancellation();
        this.#pause = pause;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          pause.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        delay = Math.min(delay * 2, LISTEN_RETRY_MAX_MS);
      }
    } finally {
      this.#running = false;
    }
  }
}

const LISTEN_RETRY_MIN_MS = 1_000;
const LISTEN_RETRY_MAX_MS = 30_000;

/** The listen filter for what a server announces and the resources subscribed to; undefined when there is nothing to hear. */
export function listenFilter(capabilities: JsonObject, resources: ReadonlySet<string>): JsonObject | undefined {
  const filter: JsonObject = {};
  const announces = (feature: string): boolean => isObject(capabilities[feature]) && (capabilities[feature] as JsonObject).listChanged === true;
  for (const change of listChanges()) if (announces(change.capability)) filter[change.listenFlag] = true;
  if (resources.size > 0) filter.resourceSubscriptions = [...resources];
  return Object.keys(filter).length === 0 ? undefined : filter;
}
