// JSON-RPC 2.0 message types as MCP constrains them, and the guards that turn `unknown`
// wire input into them. Nothing here knows about HTTP, stdio or sessions.

export type JsonRpcId = string | number;
export type JsonObject = Record<string, unknown>;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: JsonObject;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: JsonObject;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: JsonObject;
}

export interface JsonRpcFailure {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// MCP: request ids MUST be a string or an integer, never null. An integer beyond 2^53 - 1 has
// already lost digits in JSON.parse, so its answer would carry another id: it is refused.
function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || Number.isSafeInteger(value);
}

/** Why a message's id cannot be used as sent, or undefined (no id, or a valid one). */
export function idProblem(value: unknown): string | undefined {
  if (!isObject(value) || !('id' in value) || value.id === null || isId(value.id)) return undefined;
  if (typeof value.id === 'number' && Number.isInteger(value.id)) return 'a numeric id must be a safe integer (at most 2^53 - 1 in magnitude); send larger ids as strings';
  return 'the id must be a string or an integer';
}

/** The id to answer a message that failed validation with: its own when valid, else null (JSON-RPC 2.0 §5). */
export function answerableId(value: unknown): JsonRpcId | null {
  return isObject(value) && isId(value.id) ? value.id : null;
}

function isErrorObject(value: unknown): value is JsonRpcErrorObject {
  return isObject(value) && Number.isInteger(value.code) && typeof value.message === 'string';
}

/** Returns the message when `value` is a well-formed JSON-RPC 2.0 message, else undefined. */
export function parseMessage(value: unknown): JsonRpcMessage | undefined {
  if (!isObject(value) || value.jsonrpc !== '2.0') return undefined;
  if (value.params !== undefined && !isObject(value.params)) return undefined;
  if (typeof value.method === 'string') {
    if (!('id' in value)) return value as unknown as JsonRpcNotification;
    return isId(value.id) ? (value as unknown as JsonRpcRequest) : undefined;
  }
  if ('result' in value) {
    return isId(value.id) && isObject(value.result) && !('error' in value)
      ? (value as unknown as JsonRpcSuccess)
      : undefined;
  }
  if ('error' in value) {
    return (isId(value.id) || value.id === null) && isErrorObject(value.error)
      ? (value as unknown as JsonRpcFailure)
      : undefined;
  }
  return undefined;
}

export function isRequest(message: JsonRpcMessage): message is JsonRpcRequest {
  return 'method' in message && 'id' in message;
}

export function isNotification(message: JsonRpcMessage): message is JsonRpcNotification {
  return 'method' in message && !('id' in message);
}

export function isResponse(message: JsonRpcMessage): message is JsonRpcResponse {
  return !('method' in message);
}

export function isFailure(message: JsonRpcResponse): message is JsonRpcFailure {
  return 'error' in message;
}

export function success(id: JsonRpcId, result: JsonObject): JsonRpcSuccess {
  return { jsonrpc: '2.0', id, result };
}

export function failure(id: JsonRpcId | null, error: JsonRpcErrorObject): JsonRpcFailure {
  return { jsonrpc: '2.0', id, error };
}

export function notification(method: string, params?: JsonObject): JsonRpcNotification {
  return params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
}

/** The `_meta` object of a params object, when present and well-formed. */
export function metaOf(params: JsonObject | undefined): JsonObject | undefined {
  const meta = params?._meta;
  return isObject(meta) ? meta : undefined;
}

export type ProgressToken = string | number;

export function progressTokenOf(params: JsonObject | undefined): ProgressToken | undefined {
  const token = metaOf(params)?.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}
