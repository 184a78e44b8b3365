// Where a tools/call meets an upstream's tasks (the router's tool-call step asks this): an
// upstream's task comes back under a sealed handle, in the form the client speaks; a tool that
// runs only as a task is made a task upstream for a client that knows none (tasks/drive.ts) or
// handed to an extension client as one (unless it would end with the request: an anonymous
// 2026-07-28 request's own upstream session holds it, so the call follows it, and the gateway's
// own task stands for the call); a 2025-11-25 client's `task` reaches a 2026-07-28 upstream as
// the extension it declares for that request.
import { META, isStatelessVersion } from '../mcp/era.js';
import { GatewayError, RpcError } from '../mcp/errors.js';
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import { withBoundedTimings } from '../mcp/tasks.js';
import type { CancelSignal } from '../util/cancel.js';
import { declaringTasks, driveTask, followTask, needsTasks, type TaskDriver } from './drive.js';
import { extensionToLegacy, legacyAsExtension, type TaskForm } from './forms.js';
import type { Caller } from '../session/context.js';
import type { TaskAudit } from './audit.js';
import type { TaskHandles } from './handles.js';
import { declaresTasks, isTaskResult, withoutRelatedTask } from './wire.js';

/** What the tool-call step knows of a call, for tasks. */
export interface TaskCall {
  handles: TaskHandles;
  /** Records the tasks made (an upstream's, under the handle the client gets). */
  audit?: TaskAudit;
  caller: Caller;
  upstream: string;
  /** The upstream session's era ('stateless': 2026-07-28) and capabilities. */
  era: string | undefined;
  capabilities: JsonObject;
  /** The tool as the client named it (after a view), and the caller. */
  tool: string;
  principal: string;
  protocolVersion: string;
  /** The capabilities of the request, and those of its session (what upstreams are told). */
  clientCapabilities: JsonObject;
  sessionCapabilities: JsonObject;
  /** The call's params as the client sent them (a 2025-11-25 client's `task` among them; a 2026-07-28 request's is taken out at the edge). */
  params: JsonObject;
  /** Sends a request of the call to its upstream. */
  send(method: string, params: JsonObject): Promise<JsonObject>;
  /** Sends without the call's cancel signal (a cancel of the task itself). */
  sendDetached(method: string, params: JsonObject): Promise<JsonObject>;
  progress(progress: number, message: string | undefined): void;
  signal: CancelSignal;
  maxTotalMs: number;
  /** `upstreams.<name>.tasks: off`: the gateway makes no task of its calls. */
  off: boolean;
  /** Records a task of a 2025-11-25 upstream as the session's (its upstream session is kept while it may run). */
  own(taskId: string): void;
  /** Tells a 2025-11-25 client of a 2026-07-28 upstream's task as it changes (by its handle). */
  follow?(handle: string): void;
  /**
   * The upstream session is a shared child's (`sharing: shared`), which outlives every client
   * session it serves. Undefined: taken for the client session's own.
   */
  shared?: boolean;
}

const clientForm = (call: TaskCall): TaskForm => (isStatelessVersion(call.protocolVersion) ? 'extension' : 'legacy');
const upstreamForm = (call: TaskCall): TaskForm => (call.era === 'stateless' ? 'extension' : 'legacy');

/**
 * Whether the client may be answered with a task, each revision by its own rule (SEP-2663
 * "Compatibility"): under 2026-07-28 the extension in the request's capabilities (the old `task`
 * parameter is gone); under 2025-11-25 the call's `task` alone (the extension is not defined
 * there: declaring it enables nothing).
 */
const wantsTask = (call: TaskCall): boolean => (clientForm(call) === 'extension' ? declaresTasks(call.clientCapabilities) : isObject(call.params.task));

/**
 * A 2025-11-25 server refusing a plain call of a tool whose taskSupport is "required": -32601
 * (tools.mdx), which the SDK's server hands back as an isError result saying so.
 */
function refusedAsPlain(outcome: JsonObject | Error): boolean {
  if (outcome instanceof RpcError) return outcome.error.code === -32601;
  if (outcome instanceof Error || outcome.isError !== true || !Array.isArray(outcome.content)) return false;
  return outcome.content.some((block) => isObject(block) && typeof block.text === 'string' && /requires task augmentation|taskSupport: 'required'/.test(block.text));
}

/** A 2025-11-25 upstream that takes task-augmented tools/call. */
function legacyTasks(capabilities: JsonObject): boolean {
  const tasks = capabilities.tasks;
  return isObject(tasks) && isObject(tasks.requests) && isObject(tasks.requests.tools) && isObject(tasks.requests.tools.call);
}

function declareFor(call: TaskCall): (params: JsonObject) => JsonObject {
  return (params) => (upstreamForm(call) === 'extension' ? declaringTasks(params, call.sessionCapabilities, META.clientCapabilities) : params);
}

/** The params the call goes upstream with: a 2025-11-25 client's task asked of a 2026-07-28 upstream declares the extension. */
export function outgoingCall(call: TaskCall, params: JsonObject): JsonObject {
  return isObject(call.params.task) && clientForm(call) === 'legacy' && upstreamForm(call) === 'extension' && declaresTasks(call.capabilities) ? declareFor(call)(params) : params;
}

/**
 * Whether a task the upstream makes for this call would end with the request: an anonymous
 * 2026-07-28 request runs in a session of its own, ended with it (http/stateless/sessions.ts),
 * and a sessions-era upstream's task lives in that session's own upstream session (its stdio
 * child, its HTTP session), closed with it. Not a 2026-07-28 upstream's (its tasks belong to no
 * upstream session), nor a shared child's (it outlives the session).
 */
function endsWithRequest(call: TaskCall): boolean {
  return call.caller.principal === undefined && clientForm(call) === 'extension' && upstreamForm(call) === 'legacy' && call.shared !== true;
}

/**
 * An upstream's task that would end with the request is never handed out (its handle would name
 * a task gone by the next tasks/get): the call follows it to its end in the request's own
 * session and answers with what it ends with, so a call that outlives `sessions.taskAfter`
 * becomes a task of the gateway's (gateway-tasks.ts), which any later request reaches. Input the
 * task asks for is asked within the call: its tasks/result (where a 2025-11-25 task sends its
 * requests) runs as the call's, whose requests reach the client as the call's input, and so the
 * gateway's task's `inputRequests`.
 */
function followed(call: TaskCall, created: JsonObject, send: TaskDriver['send'], legacy: boolean): Promise<JsonObject> {
  const input = async (taskId: string): Promise<JsonObject> => withoutRelatedTask(await call.send('tasks/result', { taskId }));
  return followTask(created, { ...driverOf(call, send, legacy), ...(upstreamForm(call) === 'legacy' ? { input } : {}) });
}

/**
 * The longest task id of an upstream's the gateway takes: its handle must open again
 * (handles.ts refuses longer sealed values), and no id needs more.
 */
const MAX_UPSTREAM_TASK_ID = 1_024;

/**
 * The task as the client sees it: under a sealed handle, in its own form, its timings bounded.
 * A task id too long for a handle is the upstream's protocol error: the task is cancelled
 * upstream (best effort) rather than handed out under a handle that would not open.
 */
function exposed(call: TaskCall, created: JsonObject): JsonObject | Promise<JsonObject> {
  const upstreamId = created.taskId as string;
  if (upstreamId.length > MAX_UPSTREAM_TASK_ID) {
    const refused = (): never => {
      throw new GatewayError('upstream_protocol', `upstream ${call.upstream} answered with a task id of ${upstreamId.length} characters (at most ${MAX_UPSTREAM_TASK_ID}); the gateway asked it to cancel the task`);
    };
    // Sent before the call is answered: the upstream session may end with the call (a 2026-07-28 client's own).
    return call.sendDetached('tasks/cancel', declareFor(call)({ taskId: upstreamId })).then(refused, refused);
  }
  if (upstreamForm(call) === 'legacy') call.own(upstreamId);
  const taskId = call.handles.seal({ kind: 'upstream', upstream: call.upstream, taskId: upstreamId, tool: call.tool, principal: call.principal });
  call.audit?.created({ handle: taskId, upstream: call.upstream, tool: call.tool, caller: call.caller });
  const task = withBoundedTimings({ ...created, taskId });
  if (clientForm(call) === 'legacy' && upstreamForm(call) === 'extension') call.follow?.(taskId);
  return clientForm(call) === 'legacy' ? { task: extensionToLegacy(task) } : task;
}

/**
 * The answer a call's outcome becomes where tasks are concerned, or undefined when they are not
 * (the usual): an upstream's task under a handle (or, for a client that did not ask for one, its
 * end); a tool that runs only as a task made one.
 */
export function taskOutcome(call: TaskCall, outcome: JsonObject | Error, callParams: JsonObject): JsonObject | Promise<JsonObject> | undefined {
  const declared = declareFor(call);
  const raw = (method: string, params: JsonObject): Promise<JsonObject> => call.send(method, declared(params));
  if (!(outcome instanceof Error) && isTaskResult(outcome)) {
    if (wantsTask(call)) return endsWithRequest(call) ? followed(call, outcome, legacyAsExtension(raw), true) : exposed(call, outcome);
    // A task the client did not ask for (a 2025-11-25 session whose capabilities, told to a
    // 2026-07-28 upstream, name the extension): the gateway follows it, the client gets its end.
    return followTask(outcome, driverOf(call, raw, false));
  }
  // Only as a task: a 2026-07-28 upstream says so with -32021; a 2025-11-25 one with -32601.
  const extensionOnly = needsTasks(outcome) && upstreamForm(call) === 'extension';
  const legacyOnly = upstreamForm(call) === 'legacy' && !isObject(call.params.task) && legacyTasks(call.capabilities) && refusedAsPlain(outcome);
  if (call.off || (!extensionOnly && !legacyOnly)) return undefined;
  const send = legacyOnly ? legacyAsExtension(raw) : raw;
  if (wantsTask(call)) {
    return send('tools/call', callParams).then((created) => {
      if (!isTaskResult(created)) return created;
      return endsWithRequest(call) ? followed(call, created, send, legacyOnly) : exposed(call, created);
    });
  }
  return driveTask(callParams, driverOf(call, send, legacyOnly));
}

/** What polls an upstream's task for a client that gets only its end (`legacy`: a 2025-11-25 upstream's, asked in the extension's words). */
function driverOf(call: TaskCall, send: TaskDriver['send'], legacy: boolean): TaskDriver {
  const declared = declareFor(call);
  const detached = legacy ? legacyAsExtension((method, params) => call.sendDetached(method, params)) : (method: string, params: JsonObject) => call.sendDetached(method, declared(params));
  return {
    send,
    cancel: (taskId) => void detached('tasks/cancel', { taskId }).catch(() => {}),
    progress: call.progress,
    signal: call.signal,
    maxTotalMs: call.maxTotalMs,
  };
}
