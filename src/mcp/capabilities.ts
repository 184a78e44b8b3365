// Which server capability each client-to-server method needs, and the gateway's merged view
// of its upstreams' capabilities (spec: basic/lifecycle.mdx "Capability Negotiation").
import { isObject, type JsonObject } from './jsonrpc.js';

export type ServerCapabilities = JsonObject;

/** A method that needs no capability (ping, initialize) returns true for every server. */
export function supportsMethod(capabilities: ServerCapabilities, method: string): boolean {
  switch (method) {
    case 'tools/list':
    case 'tools/call':
      return isObject(capabilities.tools);
    case 'prompts/list':
    case 'prompts/get':
      return isObject(capabilities.prompts);
    case 'resources/list':
    case 'resources/templates/list':
    case 'resources/read':
      return isObject(capabilities.resources);
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return isObject(capabilities.resources) && capabilities.resources.subscribe === true;
    case 'completion/complete':
      return isObject(capabilities.completions);
    case 'logging/setLevel':
      return isObject(capabilities.logging);
    default:
      return supportsTaskMethod(capabilities, method);
  }
}

/** The tasks/* methods need `tasks` (and its list or cancel entry); every other method passes. */
function supportsTaskMethod(capabilities: JsonObject, method: string): boolean {
  if (!method.startsWith('tasks/')) return true;
  const tasks = capabilities.tasks;
  if (!isObject(tasks)) return false;
  if (method === 'tasks/list') return isObject(tasks.list);
  if (method === 'tasks/cancel') return isObject(tasks.cancel);
  return true;
}

/** Whether a client that declared `capabilities` accepts a server-initiated request. */
export function clientSupports(capabilities: JsonObject, method: string): boolean {
  switch (method) {
    case 'sampling/createMessage':
      return isObject(capabilities.sampling);
    case 'elicitation/create':
      return isObject(capabilities.elicitation);
    case 'roots/list':
      return isObject(capabilities.roots);
    case 'tasks/get':
    case 'tasks/result':
    case 'tasks/list':
    case 'tasks/cancel':
      return supportsTaskMethod(capabilities, method);
    default:
      return false;
  }
}

/**
 * What the gateway advertises: each feature at least one upstream has, with listChanged (the
 * gateway itself emits list_changed when the merged view changes) and resources.subscribe when
 * any upstream supports it.
 */
export function mergeCapabilities(upstreams: Iterable<ServerCapabilities>): ServerCapabilities {
  const merged: JsonObject = {};
  for (const caps of upstreams) {
    if (isObject(caps.tools)) merged.tools = { listChanged: true };
    if (isObject(caps.prompts)) merged.prompts = { listChanged: true };
    if (isObject(caps.resources)) {
      const subscribe =
        caps.resources.subscribe === true ||
        (isObject(merged.resources) && merged.resources.subscribe === true);
      merged.resources = subscribe ? { subscribe: true, listChanged: true } : { listChanged: true };
    }
    if (isObject(caps.completions)) merged.completions = {};
    if (isObject(caps.logging)) merged.logging = {};
    if (isObject(caps.tasks)) merged.tasks = mergeTasks(isObject(merged.tasks) ? merged.tasks : {}, caps.tasks);
  }
  return merged;
}

/** Tasks (2025-11-25): list and cancel when any upstream offers them; task-augmented tools/call likewise. */
function mergeTasks(into: JsonObject, tasks: JsonObject): JsonObject {
  const out: JsonObject = { ...into };
  if (isObject(tasks.list)) out.list = {};
  if (isObject(tasks.cancel)) out.cancel = {};
  const requests = tasks.requests;
  if (isObject(requests) && isObject(requests.tools) && isObject(requests.tools.call)) out.requests = { tools: { call: {} } };
  return out;
}
