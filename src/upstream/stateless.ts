// What an upstream client holds when its upstream is stateless (2026-07-28): the envelope every
// request carries in `_meta`, the subscriptions/listen stream change notifications come from, and
// the requests of the sessions era kept here rather than sent: the log level and resource
// subscriptions become part of what the session says (envelope, listen filter), ping needs no
// answer from a stateless server, and input_required is driven to the final result, each input
// request asked of the client as the server-initiated request a sessions-era server would send
// (or, for a client of the same era, handed back as it came: the client answers it itself).
import { asksInput } from '../mcp/methods.js';
import { GatewayError } from '../mcp/errors.js';
import { notification, type JsonObject, type JsonRpcNotification, type JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { CancelSignal } from '../util/cancel.js';
import { ChangeListener, completeRounds, listenFilter, withEnvelope, withoutSubscriptionId, withoutWireFields, type Envelope } from './stateless-protocol.js';
import { quote } from '../util/cut.js';

/** Ids of the server-initiated requests made from a 2026-07-28 server's input requests. */
const INPUT_ID_PREFIX = 'input-';

export interface StatelessOptions {
  /** The upstream's name, for errors. */
  name: string;
  /** Sends one request over the transport (envelope added by the client). */
  send(method: string, params: JsonObject | undefined, options: { signal?: CancelSignal; timeoutMs?: number; maxTotalMs?: number; context?: unknown }): Promise<JsonObject>;
  /** Asks the client a server-initiated request on behalf of the request whose context this is. */
  ask(request: JsonRpcRequest, context: unknown): Promise<JsonObject>;
  /** Withdraws a request asked that is still waiting for the client, as a server's notifications/cancelled of it would. */
  withdraw(id: string, reason: string, context: unknown): void;
  /** What the upstream declared (read at each use). */
  capabilities(): JsonObject;
}

export class StatelessUpstream {
  readonly #options: StatelessOptions;
  readonly #envelope: Envelope;
  readonly #listener: ChangeListener;
  /** Resource URIs (the upstream's own) subscribed to through the listen stream. */
  readonly #subscribed = new Set<string>();
  #inputIds = 0;
  /**
   * Input requests asked of the client and not yet answered, by id: the context of the request
   * they were asked for. Over HTTP the server answered input_required and holds nothing, so
   * when that request ends (cancelled, failed, the upstream closed) only the gateway can
   * withdraw them, freeing the client and the relay's slot.
   */
  readonly #asked = new Map<string, unknown>();

  constructor(envelope: Envelope, options: StatelessOptions) {
    this.#envelope = envelope;
    this.#options = options;
    this.#listener = new ChangeListener(
      (filter, cancel) => options.send('subscriptions/listen', { notifications: filter }, { signal: cancel, timeoutMs: Infinity, maxTotalMs: Infinity }),
      () => listenFilter(options.capabilities(), this.#subscribed),
    );
  }

  /** Opens (or reopens, for what changed) the listen stream. */
  listen(): void {
    this.#listener.refresh();
  }

  /** Params with the envelope the session states on every request and notification. */
  withEnvelope(params: JsonObject | undefined): JsonObject {
    return withEnvelope(params, this.#envelope);
  }

  /** The notification to send for a client notification, or undefined: a 2026-07-28 server takes only cancellation. */
  notification(method: string, params: JsonObject | undefined): JsonRpcNotification | undefined {
    return method === 'notifications/cancelled' ? notification(method, withEnvelope(params, this.#envelope)) : undefined;
  }

  /** A notification as the session sees it: without the listen stream's subscription id. */
  received(message: JsonRpcNotification): JsonRpcNotification {
    return message.params ? { ...message, params: withoutSubscriptionId(message.params) } : message;
  }

  /** A request of the session, answered here or sent statelessly (and driven through its input rounds). */
  async request(method: string, params: JsonObject | undefined, options: { signal?: CancelSignal; timeoutMs?: number; maxTotalMs?: number; context?: unknown; passInput?: boolean }): Promise<JsonObject> {
    switch (method) {
      case 'ping':
        return {};
      case 'logging/setLevel':
        if (typeof params?.level === 'string') this.#envelope.logLevel = params.level;
        return {};
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        if (typeof params?.uri !== 'string') throw new GatewayError('invalid_params', `${method} needs a uri`);
        const changed = method === 'resources/subscribe' ? !this.#subscribed.has(params.uri) && !!this.#subscribed.add(params.uri) : this.#subscribed.delete(params.uri);
        if (changed) this.#listener.refresh();
        return {};
      }
      default: {
        const { send } = this.#options;
        const first = await send(method, params, options);
        if (first.resultType === 'input_required') {
          if (!asksInput(method)) throw new GatewayError('upstream_protocol', `upstream ${this.#options.name} asked for input on ${method}, which cannot take any`);
          // Its inputRequests and requestState go to the client as the upstream made them.
          if (options.passInput) return { ...withoutWireFields(first), resultType: 'input_required' };
        }
        const asked: string[] = [];
        try {
          return await completeRounds(
            first,
            (inputResponses, requestState) => send(method, { ...params, inputResponses, ...(requestState === undefined ? {} : { requestState }) }, options),
            (inputMethod, inputParams) => this.#askClient(inputMethod, inputParams, options.context, asked),
            options.signal,
          );
        } finally {
          this.#withdraw(asked, options.signal?.aborted ? 'the request was cancelled' : 'the request ended');
        }
      }
    }
  }

  close(): void {
    this.#listener.close();
    this.#withdraw([...this.#asked.keys()], 'the upstream closed');
  }

  /** An input request, asked of the client as a server-initiated request; its id is added to `ids`. */
  #askClient(method: string, params: JsonObject | undefined, context: unknown, ids: string[]): Promise<JsonObject> {
    const id = `${INPUT_ID_PREFIX}${++this.#inputIds}`;
    const answer = this.#options.ask(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params }, context);
    this.#asked.set(id, context);
    ids.push(id);
    return answer.finally(() => this.#asked.delete(id));
  }

  /** Withdraws those of `ids` still waiting for the client. */
  #withdraw(ids: readonly string[], reason: string): void {
    for (const id of ids) {
      if (!this.#asked.has(id)) continue;
      const context = this.#asked.get(id);
      this.#asked.delete(id);
      this.#options.withdraw(id, reason, context);
    }
  }
}

/** Refused when nobody takes server-initiated requests. */
export function noClient(method: string): GatewayError {
  return new GatewayError('method_not_found', `Method not found: ${quote(method)}`);
}
