// Builds the gateway's tasks from the config: the task store (`sessions.store`), handles sealed
// with `sessions.keys`, their audit records, and the scope (names, policy, `upstreams.<name>.tasks`) read at each use.
import type { SecurityEvents } from '../audit/events.js';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Catalog } from '../names/lists.js';
import type { Policy } from '../policy/policy.js';
import type { Logger } from '../util/log.js';
import { TaskAudit } from './audit.js';
import { GatewayTasks, type TaskBounds } from './gateway-tasks.js';
import { TaskHandles } from './handles.js';
import { RedisTaskStore } from './redis.js';
import { MemoryTaskStore, type TaskStore } from './store.js';

export interface TasksSetup {
  catalog: Catalog;
  /** Read at each use: a config reload may replace them. */
  policy: () => Policy;
  current: () => Config;
  metrics: Metrics;
  logger: Logger;
  /** Where task records go (the audit log, spans), when configured. */
  events?: SecurityEvents;
  bounds?: Partial<TaskBounds>;
}

export function taskStoreFor(config: Config): TaskStore {
  const { store } = config.sessions;
  return typeof store === 'object' ? new RedisTaskStore({ url: store.redis.url, prefix: store.redis.prefix }) : new MemoryTaskStore();
}

export function createTasks(config: Config, setup: TasksSetup): GatewayTasks {
  const { catalog, policy } = setup;
  return new GatewayTasks({
    store: taskStoreFor(config),
    handles: new TaskHandles(config.sessions.keys),
    metrics: setup.metrics,
    logger: setup.logger,
    audit: new TaskAudit(setup.events, (caller) => policy().access(caller.principal, caller.endpoint).teams, config.listen.path),
    ttlMs: config.sessions.taskTtl,
    afterMs: config.sessions.taskAfter,
    inputTimeoutMs: config.sessions.inputTimeout,
    ...(setup.bounds ? { bounds: setup.bounds } : {}),
    scope: {
      resolve(caller, name) {
        const exposed = policy().access(caller.principal, caller.endpoint).toolOfView(name) ?? name;
        const upstream = catalog.codec.splitName(exposed)?.upstream;
        return upstream === undefined ? undefined : { upstream, exposed };
      },
      mayCall: (caller, exposed, upstream) => policy().access(caller.principal, caller.endpoint).mayCall(exposed, upstream),
      off: (upstream) => setup.current().upstreams[upstream]?.tasks === 'off',
    },
  });
}
