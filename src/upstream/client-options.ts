// What a caller gives an UpstreamClient and gets back from it: the options of one request, of
// the client itself, and the result of its handshake (initialize, or a server/discover that
// stands for one), parsed here from what the upstream answered.
import { isObject, type JsonObject, type JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';
import type { CancelSignal } from '../util/cancel.js';

export interface RequestOptions {
  signal?: CancelSignal;
  /** Idle deadline; progress restarts it. Defaults to the upstream's timeoutMs. */
  timeoutMs?: number;
  /** Total deadline, however much progress arrives. Defaults to the upstream's maxTotalTimeoutMs. */
  maxTotalMs?: number;
  /** Receives notifications/progress params with the caller's own progress token restored. */
  onProgress?: (params: JsonObject) => void;
  /** Opaque caller state handed back with messages the upstream relates to this request. */
  context?: unknown;
  /**
   * A 2026-07-28 upstream's input_required comes back as it is (its inputRequests and
   * requestState unchanged) for the caller's own client to answer, rather than asked of the
   * client request by request (a 2026-07-28 client answers it itself).
   */
  passInput?: boolean;
  /** Extra HTTP headers for the request (a 2026-07-28 tools/call's Mcp-Param-*); other transports ignore them. */
  headers?: Readonly<Record<string, string>>;
}

export interface InitializeResult {
  protocolVersion: string;
  capabilities: JsonObject;
  serverInfo: JsonObject;
  instructions?: string;
}

/** Handles a server-initiated request; `context` is that of the related request, if known. */
export type ServerRequestHandler = (request: JsonRpcRequest, context: unknown) => Promise<JsonObject>;

export interface UpstreamClientOptions {
  timeoutMs: number;
  maxTotalTimeoutMs: number;
  logger: Logger;
  /** Called once when the client ends: closed by its owner (no reason) or lost (reason). */
  onEnd?: (reason?: Error) => void;
  /** The upstream restarted (or its session was renewed) and is initialized again. */
  onRestart?: () => void;
  /** A request was cancelled upstream; `reason` is what the upstream was told. */
  onCancel?: (reason: string) => void;
  /** A response matched nothing in flight and was dropped. */
  onUnknownResponse?: () => void;
}

/** An initialize result's fields the gateway uses, or undefined when it is not one. */
export function parseInitializeResult(result: JsonObject): InitializeResult | undefined {
  if (typeof result.protocolVersion !== 'string' || !isObject(result.capabilities)) return undefined;
  const init: InitializeResult = {
    protocolVersion: result.protocolVersion,
    capabilities: result.capabilities,
    serverInfo: isObject(result.serverInfo) ? result.serverInfo : {},
  };
  if (typeof result.instructions === 'string') init.instructions = result.instructions;
  return init;
}
