// What a replica needs to carry sessions on with the others: present when session ids are
// self-describing (sessions.keys), with the shared replay log when sessions.store is Redis.
import type { Config } from '../config/schema.js';
import type { Logger } from '../util/log.js';
import { RedisStreamLog } from './redis-log.js';
import type { FleetOptions } from './session.js';

export function fleetOf(config: Config, logger: Logger): FleetOptions | undefined {
  const { keys, store, replayEvents, replayBytes, idleTimeout } = config.sessions;
  if (!keys) return undefined;
  if (typeof store !== 'object') return {};
  return { log: new RedisStreamLog({ url: store.redis.url, prefix: store.redis.prefix, events: replayEvents, bytes: replayBytes, ttlMs: idleTimeout, logger }) };
}
