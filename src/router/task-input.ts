// Input for a 2025-11-25 upstream's task, asked of a 2026-07-28 client in the extension's form.
// The 2025-11-25 form (tasks.mdx "Input Required Status") has a task in `input_required` send
// its requests (elicitation/create, sampling/createMessage) with the related-task metadata,
// delivered once the requestor calls tasks/result; the extension has tasks/get carry them as
// `inputRequests` and tasks/update answer them with `inputResponses`. So when tasks/get finds
// such a task `input_required`, the gateway calls tasks/result upstream itself and holds the
// requests that arrive on it (relayed to a channel of its own, registered like any request to
// the client); tasks/get lists those not yet answered, each under a key used once in the task's
// life, and tasks/update answers them (keys it does not hold are ignored, as SEP-2663 says).
// The requests wait in the session (and replica) that holds the upstream session of the task.
import { isObject, isRequest, type JsonObject } from '../mcp/jsonrpc.js';
import { RELATED_TASK } from '../mcp/tasks.js';
import { answerFromClient } from '../links/relay.js';
import type { DownstreamSession } from '../links/session.js';
import { requestContext, type RequestContext } from '../session/context.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { TaskInput } from '../tasks/forms.js';

/** How long tasks/get waits for the first request of an `input_required` task to arrive. */
const FIRST_REQUEST_MS = 5_000;
/** Tasks of one session whose input is held at once. */
const MAX_TASKS = 100;

interface Held {
  /** The gateway's id of the request to the client (answerFromClient settles it). */
  id: number;
  method: string;
  params: JsonObject | undefined;
}

/** The input of one upstream task: its tasks/result in flight and the requests that came on it. */
class TaskInputBridge implements TaskInput {
  readonly #session: DownstreamSession;
  readonly #owner: UpstreamClient;
  readonly #taskId: string;
  readonly #context: RequestContext;
  readonly #held = new Map<string, Held>();
  #asking = false;
  #wake: (() => void)[] = [];

  constructor(session: DownstreamSession, owner: UpstreamClient, taskId: string, context: RequestContext) {
    this.#session = session;
    this.#owner = owner;
    this.#taskId = taskId;
    this.#context = context;
  }

  async requests(): Promise<JsonObject> {
    if (!this.#asking) this.#ask();
    if (this.#held.size === 0 && this.#asking) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FIRST_REQUEST_MS);
        timer.unref();
        this.#wake.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    const out: JsonObject = {};
    for (const [key, held] of this.#held) out[key] = held.params === undefined ? { method: held.method } : { method: held.method, params: held.params };
    return out;
  }

  answer(inputResponses: JsonObject): void {
    for (const [key, response] of Object.entries(inputResponses)) {
      const held = this.#held.get(key);
      if (!held || !isObject(response)) continue;
      this.#held.delete(key);
      answerFromClient(this.#session, held.id, response);
    }
  }

  /** tasks/result upstream, on a channel of the gateway's: the task's requests come on it. */
  #ask(): void {
    this.#asking = true;
    const channel = {
      canAsk: true,
      send: (message: Parameters<RequestContext['channel']['send']>[0]): void => {
        if (isRequest(message)) {
          this.#held.set(`input-${String(message.id)}`, { id: message.id as number, method: message.method, params: withoutRelatedTask(message.params) });
          this.#wakeAll();
        } else if ('method' in message && message.method === 'notifications/cancelled') {
          // The upstream (or the gateway's deadline) gave up on one: it is no longer outstanding.
          for (const [key, held] of this.#held) if (held.id === message.params?.requestId) this.#held.delete(key);
        }
      },
    };
    const context = requestContext(this.#context, { protocolVersion: this.#context.protocolVersion, clientCapabilities: this.#session.info.clientCapabilities, logLevel: undefined }, channel);
    const ended = (): void => {
      this.#asking = false;
      this.#wakeAll();
    };
    this.#owner.request('tasks/result', { taskId: this.#taskId }, { context }).then(ended, ended);
  }

  #wakeAll(): void {
    const wake = this.#wake;
    this.#wake = [];
    for (const resolve of wake) resolve();
  }
}

function withoutRelatedTask(params: JsonObject | undefined): JsonObject | undefined {
  const meta = params?._meta;
  if (!params || !isObject(meta) || !(RELATED_TASK in meta)) return params;
  const { [RELATED_TASK]: _related, ...rest } = meta;
  const { _meta: _dropped, ...others } = params;
  return Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others;
}

/** The input bridges of each session's 2025-11-25 upstream tasks (the router holds one). */
export class TaskInputs {
  readonly #bridges = new WeakMap<DownstreamSession, Map<string, TaskInputBridge>>();

  /** The bridge of `owner`'s task `taskId` in `session`, made on first use. */
  of(session: DownstreamSession, owner: UpstreamClient, taskId: string, context: RequestContext): TaskInput {
    let bridges = this.#bridges.get(session);
    if (!bridges) this.#bridges.set(session, (bridges = new Map()));
    const key = `${owner.name}\u0000${taskId}`;
    let bridge = bridges.get(key);
    if (!bridge) {
      if (bridges.size >= MAX_TASKS) bridges.delete(bridges.keys().next().value!);
      bridge = new TaskInputBridge(session, owner, taskId, context);
      bridges.set(key, bridge);
    }
    return bridge;
  }
}
