// The raw `<prefix>:<task id>` form's memory (router/raw-tasks.ts): a task id handed to a session
// reaches its task while that session's teams may call the tool that made it; one not handed out
// here (another replica's, or forgotten past the bound) while they may see its upstream.
import { describe, expect, it } from 'vitest';
import type { DownstreamSession } from '../../src/links/session.js';
import { RawTasks } from '../../src/router/raw-tasks.js';

/** A session whose teams may call every tool but those in `denied` (namespaced names), and see every upstream but `hidden`. */
function sessionDenying(denied: Set<string>, hidden = 'hidden'): DownstreamSession {
  return { access: { mayCall: (tool: string) => !denied.has(tool), canSeeUpstream: (upstream: string) => upstream !== hidden } } as unknown as DownstreamSession;
}

describe('raw task ids', () => {
  it('reach a task handed to the session while its teams may call the tool; one not handed here by the upstream alone', () => {
    const denied = new Set<string>();
    const mine = sessionDenying(denied);
    const other = sessionDenying(new Set());
    const tasks = new RawTasks();
    tasks.handed(mine, 'legacy', 't-1', 'legacy__secret');
    tasks.handed(mine, 'legacy', 't-2', 'legacy__slow');
    expect(tasks.toolOf(mine, 'legacy', 't-1')).toBe('legacy__secret');
    // Not handed out here (another replica's): the upstream's visibility decides, with no tool.
    expect(tasks.toolOf(other, 'legacy', 't-1')).toBe('');
    expect(tasks.toolOf(mine, 'legacy', 't-3')).toBe('');
    expect(tasks.toolOf(mine, 'hidden', 't-1')).toBeUndefined();
    // A policy change denies the tool: its task is unknown from then on, the other's is not.
    denied.add('legacy__secret');
    expect(tasks.toolOf(mine, 'legacy', 't-1')).toBeUndefined();
    expect(tasks.toolOf(mine, 'legacy', 't-2')).toBe('legacy__slow');
  });

  it('are remembered 1,000 to a session, the least recently named forgotten first', () => {
    const session = sessionDenying(new Set());
    const tasks = new RawTasks();
    for (let i = 0; i < 1_000; i++) tasks.handed(session, 'legacy', `t-${i}`, 'legacy__slow');
    expect(tasks.toolOf(session, 'legacy', 't-0')).toBe('legacy__slow');
    tasks.handed(session, 'legacy', 't-1000', 'legacy__secret');
    // Forgotten: decided by the upstream alone.
    expect(tasks.toolOf(session, 'legacy', 't-1')).toBe('');
    expect(tasks.toolOf(session, 'legacy', 't-0')).toBe('legacy__slow');
    expect(tasks.toolOf(session, 'legacy', 't-1000')).toBe('legacy__secret');
  });
});
