// Whether a server (or client) declared the capability a method needs (the needs themselves are
// facts of methods.ts), and the gateway's merged view of its upstreams' capabilities (spec:
// basic/lifecycle.mdx "Capability Negotiation").
import { isObject, type JsonObject } from './jsonrpc.js';
import { methodFacts, type Capability } from './methods.js';
import { EXTENSION_TASK_METHODS, TASKS_EXTENSION } from './tasks.js';

export type ServerCapabilities = JsonObject;

/** Whether `capabilities` declares `need` (methods.ts, Capability). */
export function declares(capabilities: JsonObject, need: Capability): boolean {
  const feature = capabilities[need.feature];
  if (!isObject(feature)) return false;
  if (need.flag !== undefined) return feature[need.flag] === true;
  if (need.entry !== undefined) return isObject(feature[need.entry]);
  return true;
}

/** A tasks/* method the table does not list still needs `tasks`, as every tasks/* method does. */
const ANY_TASK: Capability = { feature: 'tasks' };

/** A method that needs no capability (ping, initialize) returns true for every server. */
export function supportsMethod(capabilities: ServerCapabilities, method: string): boolean {
  // The Tasks extension's methods, of a server that declared the extension (SEP-2663).
  if (EXTENSION_TASK_METHODS.has(method) && isObject(capabilities.extensions) && isObject(capabilities.extensions[TASKS_EXTENSION])) return true;
  const need = methodFacts(method)?.needs ?? (method.startsWith('tasks/') ? ANY_TASK : undefined);
  return need === undefined || declares(capabilities, need);
}

/** Whether a client that declared `capabilities` accepts a server-initiated request. */
export function clientSupports(capabilities: JsonObject, method: string): boolean {
  const need = methodFacts(method)?.clientNeeds;
  return need !== undefined && declares(capabilities, need);
}

/**
 * What the gateway advertises: each feature at least one upstream has, with listChanged (the
 * gateway itself emits list_changed when the merged view changes), resources.subscribe when
 * any upstream supports it, and every extension an upstream declares.
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
    // Extensions (versioning.mdx "Extensions"), e.g. MCP Apps' io.modelcontextprotocol/ui: each
    // one any upstream declares, with the settings of the first (in upstream order) that does.
    if (isObject(caps.extensions)) merged.extensions = { ...caps.extensions, ...(isObject(merged.extensions) ? merged.extensions : {}) };
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
