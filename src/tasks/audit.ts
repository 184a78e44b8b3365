// A task's life as audit records (docs/audit.md): made, ended, asked to cancel, lost with the
// replica that ran it. Each names the task by the handle its client knows (never an upstream's
// own id), its upstream and tool, and who it is for: the principal and the teams policy gives it.
import type { SecurityEvents } from '../audit/events.js';
import type { TaskAuditEvent } from '../audit/record.js';
import type { Caller } from '../session/context.js';

/** The task a record is about. */
export interface AuditedTask {
  handle: string;
  upstream: string;
  /** The tool as the client named it. */
  tool: string;
  /** Who asked (the request's caller), or whose the task is when nobody is asking now. */
  caller?: Caller | undefined;
  principal?: string | undefined;
  /** When the task was made (ISO 8601), for an end's duration. */
  createdAt?: string | undefined;
}

export class TaskAudit {
  readonly #events: SecurityEvents | undefined;
  readonly #teams: (caller: Caller) => readonly string[];
  readonly #mainEndpoint: string | undefined;

  /** `teams`: the caller's teams as policy gives them; `mainEndpoint`: listen.path, for a caller of the main endpoint. */
  constructor(events: SecurityEvents | undefined, teams: (caller: Caller) => readonly string[], mainEndpoint?: string) {
    this.#events = events;
    this.#teams = teams;
    this.#mainEndpoint = mainEndpoint;
  }

  created(task: AuditedTask): void {
    this.#write('task.created', task, { outcome: 'ok' });
  }

  /** The task reached `status`; a failure's kind is its error's `data.reason`, else its code. */
  ended(task: AuditedTask, status: 'completed' | 'failed' | 'cancelled', error?: unknown): void {
    const created = task.createdAt === undefined ? Number.NaN : Date.parse(task.createdAt);
    const durationMs = Number.isFinite(created) ? Math.max(0, Date.now() - created) : undefined;
    this.#write('task.ended', task, { outcome: status, ...(status === 'failed' ? { errorKind: errorKindOf(error) } : {}), ...(durationMs === undefined ? {} : { durationMs }) });
  }

  cancelRequested(task: AuditedTask): void {
    this.#write('task.cancel_requested', task, { outcome: 'ok' });
  }

  /** The replica running a task the gateway made stopped renewing it: the task ended failed. */
  lost(task: AuditedTask): void {
    this.#write('task.lost', task, { outcome: 'failed', reason: 'replica_lost' });
  }

  #write(event: TaskAuditEvent, task: AuditedTask, facts: { outcome: string; errorKind?: string | undefined; reason?: string; durationMs?: number }): void {
    if (!this.#events) return;
    const { caller } = task;
    const teams = caller ? this.#teams(caller) : [];
    this.#events.task(event, {
      ...(caller ? { requestId: caller.requestId, traceparent: caller.traceparent, tracestate: caller.tracestate } : {}),
      principal: caller?.principal?.id ?? (task.principal || undefined),
      team: teams.length > 0 ? teams.join(',') : undefined,
      endpoint: caller ? (caller.endpoint ?? this.#mainEndpoint) : undefined,
      upstream: task.upstream || undefined,
      name: task.tool || undefined,
      task: task.handle,
      ...facts,
    });
  }
}

function errorKindOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, data } = error as { code?: unknown; data?: unknown };
  const reason = typeof data === 'object' && data !== null ? (data as { reason?: unknown }).reason : undefined;
  if (typeof reason === 'string') return reason;
  return typeof code === 'number' ? String(code) : undefined;
}
