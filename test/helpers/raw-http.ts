// Raw JSON-RPC over HTTP for tests that must see the wire: exactly the headers a test chooses
// (wrong or missing ones included), the status and headers answered, the body as JSON or as SSE
// messages, and sessions opened by hand (initialize, then notifications/initialized). Over
// fetch, or over node:http where a test must pick the Host header, the socket or the TLS identity.
import { request as httpRequest, type IncomingHttpHeaders, type RequestOptions as NodeRequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { expect } from 'vitest';
import { sseMessages, type JsonRpc } from './sse-reader.js';

/** transports.mdx "Sending Messages to the Server": a POST must accept both answer forms. */
export const POST_ACCEPT = 'application/json, text/event-stream';
/** What a conforming client sends with every POST. */
export const POST_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json', accept: POST_ACCEPT };
export const LATEST = '2025-11-25';
/** Bounds every single HTTP exchange, its body included, unless the test gives its own bound. */
export const REQUEST_TIMEOUT_MS = 10_000;

export const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' } as const;

export interface HeaderOptions {
  /** Sent as Mcp-Session-Id. */
  session?: string;
  /** Sent as MCP-Protocol-Version; nothing is sent unless given. */
  protocolVersion?: string;
  /** Merged last, over the defaults and the two above: a value replaces one, undefined leaves it out. */
  headers?: Record<string, string | undefined>;
}

/** `defaults`, then the session and version headers, then `options.headers`. */
export function rawHeaders(defaults: Readonly<Record<string, string>>, options: HeaderOptions = {}): Record<string, string> {
  const merged: Record<string, string | undefined> = { ...defaults };
  if (options.session !== undefined) merged['mcp-session-id'] = options.session;
  if (options.protocolVersion !== undefined) merged['mcp-protocol-version'] = options.protocolVersion;
  Object.assign(merged, options.headers);
  return Object.fromEntries(Object.entries(merged).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

export interface FetchOptions extends HeaderOptions {
  /** Bounds the exchange (default REQUEST_TIMEOUT_MS); unused when `signal` is given. */
  timeoutMs?: number;
  /** Ends the exchange instead of the timeout; null: nothing bounds it (a stream the test holds and ends). */
  signal?: AbortSignal | null;
}

export interface FetchInit extends FetchOptions {
  /** POST unless given. */
  method?: string;
  body?: string | null;
  /** The headers under everything else; none unless given. */
  defaults?: Readonly<Record<string, string>>;
}

function signalOf(options: FetchOptions): AbortSignal | null {
  return options.signal === undefined ? AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS) : options.signal;
}

function bodyOf(message: unknown): string {
  return typeof message === 'string' ? message : JSON.stringify(message);
}

/** One request over fetch with exactly these headers; the response with its body unread. */
export function rawFetch(url: URL | string, init: FetchInit = {}): Promise<Response> {
  return fetch(url, { method: init.method ?? 'POST', headers: rawHeaders(init.defaults ?? {}, init), body: init.body ?? null, signal: signalOf(init) });
}

/** POSTs a JSON-RPC message (or batch; a string is sent as it is) with POST_HEADERS under `headers`; the body unread. */
export function postRaw(url: URL | string, message: unknown, options: FetchOptions = {}): Promise<Response> {
  return rawFetch(url, { ...options, method: 'POST', defaults: POST_HEADERS, body: bodyOf(message) });
}

export interface StreamOptions extends FetchOptions {
  /** The Accept header, text/event-stream unless given. */
  accept?: string;
  /** Sent as Last-Event-ID: a resumption. */
  lastEventId?: string;
}

/** A GET on the MCP endpoint (the standalone stream, or a resumption); the body unread. */
export function openStream(url: URL | string, options: StreamOptions = {}): Promise<Response> {
  const defaults: Record<string, string> = { accept: options.accept ?? 'text/event-stream' };
  if (options.lastEventId !== undefined) defaults['last-event-id'] = options.lastEventId;
  return rawFetch(url, { ...options, method: 'GET', defaults });
}

/**
 * Opens the standalone stream, retrying while the gateway answers 409: it learns that an
 * earlier stream's client went away asynchronously. Bounded at about 2 s.
 */
export async function openStreamWhenFree(url: URL | string, options: StreamOptions = {}): Promise<Response> {
  const deadline = Date.now() + 2_000;
  let res = await openStream(url, options);
  while (res.status === 409 && Date.now() < deadline) {
    await res.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 20));
    res = await openStream(url, options);
  }
  return res;
}

/** A whole exchange: the status, the headers and the body, read to the end. */
export interface RawReply {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON; undefined when it is empty or not JSON. */
  json: unknown;
  /** True when the answer is an SSE stream. */
  sse: boolean;
  /** Every JSON-RPC message of the body (see messagesOf), parsed when read: throws on a body that is neither JSON nor SSE. */
  readonly messages: JsonRpc[];
}

function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function contentType(headers: Headers | IncomingHttpHeaders): string {
  return (headers instanceof Headers ? headers.get('content-type') : headers['content-type']) ?? '';
}

/**
 * Every JSON-RPC message of a body read to its end: none for an empty body, the data of every
 * SSE event that carries some for text/event-stream, else the JSON (a batch's elements).
 */
export function messagesOf<T = JsonRpc>(reply: { headers: Headers | IncomingHttpHeaders; text: string }): T[] {
  if (reply.text === '') return [];
  if (contentType(reply.headers).startsWith('text/event-stream')) return sseMessages<T>(reply.text);
  return ([] as T[]).concat(JSON.parse(reply.text) as T | T[]);
}

/** Asserts an HTTP refusal whose body is a JSON-RPC error with this code and id. */
export function expectRpcError(reply: { status: number; headers: Headers | IncomingHttpHeaders; text: string; json: unknown }, status: number, code: number, id: number | string | null = null): void {
  expect(reply.status, reply.text).toBe(status);
  expect(contentType(reply.headers)).toMatch(/^application\/json/);
  expect(reply.json).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
}

/** Reads a response to its end. */
export async function readReply(res: Response): Promise<RawReply> {
  const text = await res.text();
  const reply: RawReply = {
    status: res.status,
    headers: res.headers,
    text,
    json: parseJson(text),
    sse: contentType(res.headers).startsWith('text/event-stream'),
    get messages() {
      return messagesOf(reply);
    },
  };
  return reply;
}

/** One request over fetch, read to the end. */
export async function exchange(url: URL | string, init: FetchInit = {}): Promise<RawReply> {
  return readReply(await rawFetch(url, init));
}

/** POSTs a JSON-RPC message as a conforming client does (unless `headers` say otherwise), read to the end. */
export async function postRpc(url: URL | string, message: unknown, options: FetchOptions = {}): Promise<RawReply> {
  return readReply(await postRaw(url, message, options));
}

export interface InitializeRequestOptions {
  protocolVersion?: string;
  /** The initialize request's id; 0 unless given. */
  id?: number | string;
  clientInfo?: { name: string; version: string };
  capabilities?: Record<string, unknown>;
}

/** An initialize request: LATEST, id 0, no capabilities, clientInfo raw 1, unless given. */
export function initializeMessage(options: InitializeRequestOptions = {}) {
  return {
    jsonrpc: '2.0',
    id: options.id ?? 0,
    method: 'initialize',
    params: { protocolVersion: options.protocolVersion ?? LATEST, capabilities: options.capabilities ?? {}, clientInfo: options.clientInfo ?? { name: 'raw', version: '1' } },
  };
}

export interface InitializeOptions extends InitializeRequestOptions {
  /** Sent on both requests and kept in the session's headers (credentials, Origin). */
  headers?: Record<string, string>;
  /**
   * Whether notifications/initialized and the session's headers carry MCP-Protocol-Version
   * (default true); a client that never sends it is assumed to speak 2025-03-26.
   */
  versionHeader?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal | null;
}

/** A session opened by hand. */
export interface RawSession {
  url: URL;
  /** Its Mcp-Session-Id. */
  id: string;
  protocolVersion: string;
  /** What every later request of it carries: the initialize headers, the session id and (unless left out) the version. */
  headers: Record<string, string>;
}

interface Answer {
  status: number;
  sessionId: string | undefined;
  text: string;
  messages: () => JsonRpc[];
}

/** initialize, then notifications/initialized, each checked as a client would; `post` carries them. */
async function handshake(url: URL, options: InitializeOptions, post: (message: unknown, headers: Record<string, string>) => Promise<Answer>): Promise<RawSession> {
  const request = initializeMessage(options);
  const protocolVersion = request.params.protocolVersion;
  const init = await post(request, options.headers ?? {});
  expect(init.status, init.text).toBe(200);
  expect(init.messages().find((m) => m.id === request.id)?.result?.protocolVersion, init.text).toBe(protocolVersion);
  const id = init.sessionId;
  expect(typeof id).toBe('string');
  expect(id).toBeTruthy();
  const headers = rawHeaders(options.headers ?? {}, { session: id!, ...(options.versionHeader === false ? {} : { protocolVersion }) });
  const initialized = await post(INITIALIZED, headers);
  expect(initialized.status, initialized.text).toBe(202);
  return { url, id: id!, protocolVersion, headers };
}

/** Opens a session over fetch: initialize (checked: 200, the version asked for, a session id), then notifications/initialized (202). */
export function initializeRaw(url: URL, options: InitializeOptions = {}): Promise<RawSession> {
  return handshake(url, options, async (message, headers) => {
    const reply = await postRpc(url, message, { headers, timeoutMs: options.timeoutMs, signal: options.signal });
    return { status: reply.status, sessionId: reply.headers.get('mcp-session-id') ?? undefined, text: reply.text, messages: () => reply.messages };
  });
}

/** POSTs a request in a session opened by hand, read to the end. */
export function sendIn(session: RawSession, message: unknown, options: Omit<FetchOptions, 'session' | 'protocolVersion'> = {}): Promise<RawReply> {
  return postRpc(session.url, message, { ...options, headers: { ...session.headers, ...options.headers } });
}

// ---------------------------------------------------------------------------------------------
// node:http: the Host header, a body on a socket of the test's choosing, TLS identities.

export interface HttpReply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is empty or not JSON. */
  json: unknown;
}

export interface HttpOptions extends HeaderOptions {
  /** POST unless given. */
  method?: string;
  /** Overrides the URL's path (e.g. /healthz on the gateway's port). */
  path?: string;
  body?: string;
  /** Trust and client identity for https URLs. */
  tls?: { ca?: string | string[]; cert?: string; key?: string };
  /** Send over this already open socket instead of a new connection. */
  socket?: Socket;
  /** Bounds the exchange (default REQUEST_TIMEOUT_MS). */
  timeoutMs?: number;
}

/** Where and how a node:http request travels, apart from what it says. */
export type HttpTransportOptions = Pick<HttpOptions, 'path' | 'tls' | 'socket' | 'timeoutMs'>;

/** One request on its own connection (or the given socket), read to the end. */
export function httpExchange(url: URL, options: HttpOptions = {}): Promise<HttpReply> {
  const secure = url.protocol === 'https:';
  const requestOptions: NodeRequestOptions = {
    hostname: url.hostname,
    port: url.port,
    path: options.path ?? url.pathname,
    method: options.method ?? 'POST',
    headers: rawHeaders({}, options),
    signal: AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS),
    ...(options.socket ? { createConnection: () => options.socket! } : { agent: false }),
    ...(secure ? options.tls : {}),
  };
  // Over a socket already speaking TLS, plain HTTP is written on it.
  const send = secure && !options.socket ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(requestOptions, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, headers: res.headers, text, json: parseJson(text) });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** POSTs a JSON-RPC message (a string as it is) over node:http with POST_HEADERS under `headers`. */
export function httpPost(url: URL, message: unknown, options: Omit<HttpOptions, 'body'> = {}): Promise<HttpReply> {
  return httpExchange(url, { ...options, headers: { ...POST_HEADERS, ...options.headers }, body: bodyOf(message) });
}

/** Opens a session over node:http, checked as initializeRaw checks it; `http` picks the TLS identity or socket. */
export function initializeHttp(url: URL, options: InitializeOptions & { http?: HttpTransportOptions } = {}): Promise<RawSession> {
  return handshake(url, options, async (message, headers) => {
    const reply = await httpPost(url, message, { ...options.http, headers, timeoutMs: options.timeoutMs ?? options.http?.timeoutMs });
    const sessionId = reply.headers['mcp-session-id'];
    return { status: reply.status, sessionId: typeof sessionId === 'string' ? sessionId : undefined, text: reply.text, messages: () => messagesOf(reply) };
  });
}
