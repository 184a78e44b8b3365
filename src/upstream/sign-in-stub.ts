// What a session holds of a `userAuth` upstream while its principal has not signed in there: an
// in-process MCP server behind the Transport interface, listing one tool, `sign_in`. Because it
// is an upstream like any other, its list is merged, namespaced and filtered by policy, and its
// URL-mode elicitation reaches the client the way any upstream's does (an elicitation/create on
// the call's stream, or input_required for a 2026-07-28 client).
import { isObject, isRequest, isResponse, type JsonObject, type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { MessageExtra, Transport } from '../transport/types.js';
import { quote } from '../util/cut.js';

/** A connect URL made for the session's principal, and what its sign-in comes to. */
export interface ConnectLink {
  url: string;
  elicitationId: string;
  /** True once the principal has a credential for the upstream; false when the link expired. */
  completed: Promise<boolean>;
  /** Stop waiting (the call was cancelled). */
  abandon(): void;
}

export interface SignInStubOptions {
  /** The upstream's name, as the user knows it. */
  upstream: string;
  /** The client's own protocol version (the stub is initialized with a legacy one for 2026-07-28 clients). */
  clientVersion: string;
  /** Whether the client declared elicitation in URL mode. */
  urlElicitation: boolean;
  connect(): Promise<ConnectLink>;
}

export const SIGN_IN_TOOL = 'sign_in';
export const SIGN_OUT_TOOL = 'sign_out';

/** The sign-in tool as listed (its upstream's prefix is added like any tool's). */
export function signInTool(upstream: string): JsonObject {
  return {
    name: SIGN_IN_TOOL,
    title: `Sign in to ${upstream}`,
    description: `Sign in to ${upstream} as yourself. Answers with a link for the user to open in a browser; once signed in, ${upstream}'s own tools are listed.`,
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true, openWorldHint: true },
  };
}

/** One sentence a model can relay, with the connect URL. */
export function signInSentence(upstream: string, url: string): string {
  return `To use ${upstream}, the user must first sign in to it as themselves by opening ${url} in a browser, then try again.`;
}

export class SignInStubTransport implements Transport {
  readonly #options: SignInStubOptions;
  #closed = false;
  #nextId = 0;
  #retired: (() => void) | undefined;
  /** Elicitations sent to the client, by their id, waiting for its answer. */
  readonly #asked = new Map<JsonRpcId, (result: JsonObject | undefined) => void>();
  /** Calls in flight, by the client's request id: how to stop them. */
  readonly #calls = new Map<JsonRpcId, () => void>();

  onmessage?: (message: JsonRpcMessage, extra?: MessageExtra) => void;
  onclose?: (reason?: Error) => void;

  constructor(options: SignInStubOptions) {
    this.#options = options;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Calls in flight (a replaced stub closes once they are answered). */
  get busy(): boolean {
    return this.#calls.size > 0;
  }

  async start(): Promise<void> {}

  /** Replaced by the real upstream: `close` runs once the calls in flight are answered. */
  retire(close: () => void): void {
    this.#retired = close;
    if (this.#calls.size === 0) queueMicrotask(close);
  }

  async send(message: JsonRpcMessage): Promise<void> {
    if (this.#closed) return;
    if (isResponse(message)) {
      const answer = this.#asked.get(message.id as JsonRpcId);
      this.#asked.delete(message.id as JsonRpcId);
      answer?.('result' in message && isObject(message.result) ? message.result : undefined);
      return;
    }
    if (!isRequest(message)) {
      if (message.method === 'notifications/cancelled' && isObject(message.params)) this.#calls.get(message.params.requestId as JsonRpcId)?.();
      return;
    }
    void this.#answer(message).then((reply) => {
      this.#emit(reply);
      // After the answer (emitted in order before it): a replaced stub goes once idle.
      if (this.#retired && this.#calls.size === 0) queueMicrotask(this.#retired);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const stop of this.#calls.values()) stop();
    for (const answer of this.#asked.values()) answer(undefined);
    this.#asked.clear();
    this.onclose?.();
  }

  #emit(message: JsonRpcMessage, extra?: MessageExtra): void {
    if (this.#closed) return;
    queueMicrotask(() => this.onmessage?.(message, extra));
  }

  async #answer(request: JsonRpcRequest): Promise<JsonRpcMessage> {
    const ok = (result: JsonObject): JsonRpcMessage => ({ jsonrpc: '2.0', id: request.id, result });
    switch (request.method) {
      case 'initialize': {
        const version = isObject(request.params) && typeof request.params.protocolVersion === 'string' ? request.params.protocolVersion : '2025-06-18';
        // Every list the real upstream may have, so the session offers them once signed in.
        return ok({ protocolVersion: version, capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } }, serverInfo: { name: `switchyard-sign-in-${this.#options.upstream}`, version: '1' } });
      }
      case 'ping':
        return ok({});
      case 'tools/list':
        return ok({ tools: [signInTool(this.#options.upstream)] });
      case 'prompts/list':
        return ok({ prompts: [] });
      case 'resources/list':
        return ok({ resources: [] });
      case 'resources/templates/list':
        return ok({ resourceTemplates: [] });
      case 'tools/call':
        return ok(await this.#call(request));
      default:
        return { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: `Method not found: ${quote(request.method)} (sign in to ${this.#options.upstream} first)` } };
    }
  }

  /** sign_in (or any tool of the upstream, while signed out): the consent, where the client can show it. */
  async #call(request: JsonRpcRequest): Promise<JsonObject> {
    const { upstream, urlElicitation } = this.#options;
    const link = await this.#options.connect();
    if (!urlElicitation) return textResult(signInSentence(upstream, link.url), true);
    let stopped = false;
    const askId = `sign-in-${++this.#nextId}`;
    const stop = (): void => {
      stopped = true;
      link.abandon();
      this.#asked.get(askId)?.(undefined);
      this.#asked.delete(askId);
    };
    this.#calls.set(request.id, stop);
    try {
      const answer = await this.#elicit(askId, request.id, link);
      if (stopped || answer === undefined) return textResult(`The sign-in to ${upstream} was interrupted; call sign_in again for a new link.`, true);
      if (answer.action !== 'accept') return textResult(`The user declined to sign in to ${upstream}.`, false);
      const done = await link.completed;
      if (!done) return textResult(`The sign-in to ${upstream} did not finish in time; call sign_in again for a new link.`, true);
      // On the call's own stream, ahead of its answer: the one stream this client surely reads
      // (a session's standalone stream may not be open), and it goes to this client alone.
      if (this.#options.clientVersion === '2025-11-25') {
        this.#emit({ jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: link.elicitationId } }, { relatedRequestId: request.id });
      }
      return textResult(`Signed in to ${upstream}; its tools are listed now.`, false);
    } finally {
      this.#calls.delete(request.id);
      link.abandon();
    }
  }

  #elicit(id: string, callId: JsonRpcId, link: ConnectLink): Promise<JsonObject | undefined> {
    const { upstream, clientVersion } = this.#options;
    const params: JsonObject = { mode: 'url', url: link.url, message: `Sign in to ${upstream} as yourself to let this assistant use it.` };
    // 2026-07-28 dropped elicitationId (its retry carries the outcome).
    if (clientVersion === '2025-11-25') params.elicitationId = link.elicitationId;
    return new Promise((resolve) => {
      this.#asked.set(id, resolve);
      this.#emit({ jsonrpc: '2.0', id, method: 'elicitation/create', params }, { relatedRequestId: callId });
    });
  }
}

function textResult(text: string, isError: boolean): JsonObject {
  return { content: [{ type: 'text', text }], isError };
}
