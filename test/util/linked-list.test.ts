import { describe, expect, it } from 'vitest';
import { LinkedList, type Linked } from '../../src/util/linked-list.js';

interface Entry extends Linked<Entry> {
  name: string;
}
const entry = (name: string): Entry => ({ name, prev: undefined, next: undefined });
const names = (list: LinkedList<Entry>): string[] => {
  const seen: string[] = [];
  list.forEach((e) => seen.push(e.name));
  return seen.sort();
};

describe('LinkedList', () => {
  it('adds and deletes in any order, counting, and leaves a deleted entry pointing at nothing', () => {
    const list = new LinkedList<Entry>();
    const [a, b, c] = ['a', 'b', 'c'].map(entry);
    for (const e of [a!, b!, c!]) list.add(e);
    expect(list.size).toBe(3);
    list.delete(b!);
    expect(b!.prev).toBeUndefined();
    expect(b!.next).toBeUndefined();
    expect(names(list)).toEqual(['a', 'c']);
    list.delete(c!); // the first
    list.delete(a!); // the last
    expect(list.size).toBe(0);
    expect(names(list)).toEqual([]);
  });

  it('ignores deleting an entry twice, or one never added', () => {
    const list = new LinkedList<Entry>();
    const a = entry('a');
    list.add(a);
    list.add(entry('b'));
    list.delete(a);
    list.delete(a);
    list.delete(entry('x'));
    expect(list.size).toBe(1);
    expect(names(list)).toEqual(['b']);
  });

  it('lets forEach delete the entry it is given', () => {
    const list = new LinkedList<Entry>();
    for (const name of ['a', 'b', 'c']) list.add(entry(name));
    const seen: string[] = [];
    list.forEach((e) => {
      seen.push(e.name);
      list.delete(e);
    });
    expect(seen.sort()).toEqual(['a', 'b', 'c']);
    expect(list.size).toBe(0);
  });

  it('takes everything at once, unlinked, and a taken entry deleted later changes nothing', () => {
    const list = new LinkedList<Entry>();
    const [a, b] = ['a', 'b'].map(entry);
    list.add(a!);
    list.add(b!);
    const taken = list.takeAll();
    expect(taken.map((e) => e.name).sort()).toEqual(['a', 'b']);
    expect(taken.every((e) => e.prev === undefined && e.next === undefined)).toBe(true);
    const c = entry('c');
    list.add(c);
    list.delete(a!);
    expect(list.size).toBe(1);
    expect(names(list)).toEqual(['c']);
  });
});
