// Task handles and the memory task store, alone: who a handle opens for, what a tampered or
// re-keyed one is, and the store's bounds (count per principal, TTL, for as long as a task is
// renewed), leases, and that a terminal task stays terminal.
import { describe, expect, it } from 'vitest';
import { TaskHandles } from '../../src/tasks/handles.js';
import { MemoryTaskStore, type StoredTask } from '../../src/tasks/store.js';

const KEY = 'k'.repeat(40);
const OTHER_KEY = 'o'.repeat(40);

describe('task handles', () => {
  const handles = new TaskHandles([KEY]);

  it('open for their principal only', () => {
    const sealed = handles.seal({ kind: 'upstream', upstream: 'render', taskId: 'task-1', tool: 'render__go', principal: 'alice' });
    expect(handles.open(sealed, 'alice')).toEqual({ kind: 'upstream', upstream: 'render', taskId: 'task-1', tool: 'render__go', principal: 'alice' });
    expect(handles.open(sealed, 'bob')).toBeUndefined();
    expect(handles.open(sealed, '')).toBeUndefined();
  });

  it('reveal nothing: the same task sealed twice reads differently, and names no upstream or id', () => {
    const handle = { kind: 'gateway', id: 'store-id-1', principal: 'alice' } as const;
    const once = handles.seal(handle);
    expect(handles.seal(handle)).not.toBe(once);
    expect(once).not.toContain('store-id-1');
    expect(handles.seal({ kind: 'upstream', upstream: 'render', taskId: 'task-1', tool: 'render__go', principal: 'a' })).not.toMatch(/render|task-1/);
  });

  it('a tampered handle, or one sealed under a key no longer configured, opens to nothing', () => {
    const sealed = handles.seal({ kind: 'gateway', id: 'x', principal: 'alice' });
    for (let i = 0; i < sealed.length; i += 7) {
      const flipped = sealed.slice(0, i) + (sealed[i] === 'A' ? 'B' : 'A') + sealed.slice(i + 1);
      expect(handles.open(flipped, 'alice')).toBeUndefined();
    }
    const rotated = new TaskHandles([OTHER_KEY, KEY]);
    expect(rotated.open(sealed, 'alice')).toMatchObject({ id: 'x' });
    expect(new TaskHandles([OTHER_KEY]).open(sealed, 'alice')).toBeUndefined();
    expect(handles.open('not-a-handle', 'alice')).toBeUndefined();
  });
});

function task(id: string, principal: string, ttlMs = 1_000): StoredTask {
  const at = new Date(0).toISOString();
  return { id, principal, upstream: 'u', tool: 'u__t', status: 'working', createdAt: at, lastUpdatedAt: at, ttlMs, pollIntervalMs: 1_000 };
}

describe('the memory task store', () => {
  it('bounds the tasks a principal holds, until they expire', async () => {
    let now = 0;
    const store = new MemoryTaskStore(() => now);
    expect(await store.create(task('1', 'alice'), 100, 2)).toBe(true);
    expect(await store.create(task('2', 'alice'), 100, 2)).toBe(true);
    expect(await store.create(task('3', 'alice'), 100, 2)).toBe(false);
    expect(await store.create(task('4', 'bob'), 100, 2)).toBe(true);
    now = 1_001;
    expect(await store.get('1')).toBeUndefined();
    expect(await store.create(task('3', 'alice'), 100, 2)).toBe(true);
  });

  it('a lease that ran out lets another replica end the task once', async () => {
    let now = 0;
    const store = new MemoryTaskStore(() => now);
    await store.create(task('1', 'alice'), 100, 10);
    expect((await store.get('1'))?.leaseExpired).toBe(false);
    const failed = { ...task('1', 'alice'), status: 'failed' as const };
    expect(await store.failIfAbandoned(failed)).toBe(false);
    now = 101;
    expect((await store.get('1'))?.leaseExpired).toBe(true);
    expect(await store.failIfAbandoned(failed)).toBe(true);
    expect(await store.failIfAbandoned(failed)).toBe(false);
    expect((await store.get('1'))?.task.status).toBe('failed');
  });

  it('hands what other replicas ask of a task to its owner once', async () => {
    const store = new MemoryTaskStore(() => 0);
    await store.create(task('1', 'alice'), 100, 10);
    await store.request('1', { update: { confirm: { action: 'accept' } } });
    await store.request('1', { cancel: true });
    expect([...(await store.take(['1', 'unknown']))]).toEqual([['1', { cancel: true, updates: [{ confirm: { action: 'accept' } }] }]]);
    expect((await store.take(['1'])).size).toBe(0);
  });

  it('a task renewed past its first TTL still counts against its principal', async () => {
    let now = 0;
    const store = new MemoryTaskStore(() => now);
    expect(await store.create(task('1', 'alice', 1_000), 1_000, 1)).toBe(true);
    for (now = 300; now <= 1_800; now += 300) await store.renew(['1'], 1_000, 1_000);
    expect(await store.get('1')).toBeDefined();
    expect(await store.create(task('2', 'alice', 1_000), 1_000, 1)).toBe(false);
  });

  it("a task that ended stays ended: its owner's later write is refused", async () => {
    let now = 0;
    const store = new MemoryTaskStore(() => now);
    await store.create(task('1', 'alice'), 100, 10);
    now = 101;
    expect(await store.failIfAbandoned({ ...task('1', 'alice'), status: 'failed' })).toBe(true);
    const written = await store.put({ ...task('1', 'alice'), status: 'completed', result: { content: [] } }, 100);
    expect((await store.get('1'))?.task).toMatchObject({ status: 'failed' });
    expect((await store.get('1'))?.task.result).toBeUndefined();
    expect(written).toBe(false);
  });
});
