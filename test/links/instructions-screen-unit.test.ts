// The screen of an upstream's instructions on its own: with pinning off nothing is read; hidden
// text withholds them under hide and quarantine (whatever else holds); under quarantine the
// upstream's tools and prompts are screened before it is asked whether the upstream is
// quarantined, and pins that cannot be read withhold them.
import { describe, expect, it } from 'vitest';
import { screenInstructions, type InstructionPins } from '../../src/links/instructions-screen.js';
import type { Catalog, Listing } from '../../src/names/lists.js';
import type { PinMode } from '../../src/pinning/rules.js';
import { createLogger } from '../../src/util/log.js';

const TAGGED = `Use search.${[...'LEAK'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('')}`;
const listing = { name: 'docs' } as Listing;

/** The screen's deps: what it did is recorded in `events`. */
function deps(mode: PinMode, quarantined: () => boolean | Promise<boolean>) {
  const events: string[] = [];
  const logs: string[] = [];
  const catalog = { scan: async (kind: string) => void events.push(`scan ${kind}`) } as unknown as Catalog;
  const pins: InstructionPins = {
    mode: () => mode,
    quarantined: () => {
      events.push('quarantined?');
      return quarantined();
    },
  };
  return { events, logs, deps: { catalog, pins, logger: createLogger({ level: 'debug', write: (line) => logs.push(line) }) } };
}

describe('screenInstructions', () => {
  it('looks at nothing with pinning off', async () => {
    const { events, deps: d } = deps('off', () => true);
    expect(await screenInstructions('docs', TAGGED, listing, d)).toBe(TAGGED);
    expect(events).toEqual([]);
  });

  it('withholds hidden text under hide and quarantine, naming its code points', async () => {
    for (const mode of ['hide', 'quarantine'] as const) {
      const { deps: d } = deps(mode, () => false);
      expect(await screenInstructions('docs', TAGGED, listing, d)).toBe('These instructions are withheld by pinning: they contain hidden text (U+E004C U+E0045 U+E0041 U+E004B).');
    }
  });

  it('passes hidden text under warn, and logs it', async () => {
    const { logs, events, deps: d } = deps('warn', () => true);
    expect(await screenInstructions('docs', TAGGED, listing, d)).toBe(TAGGED);
    expect(JSON.parse(logs[0]!)).toMatchObject({ level: 'warn', msg: 'upstream instructions contain hidden text', upstream: 'docs', hidden: ['U+E004C', 'U+E0045', 'U+E0041', 'U+E004B'] });
    expect(events).toEqual([]);
  });

  it('under quarantine screens the lists first, then withholds them while the upstream is quarantined', async () => {
    const held = deps('quarantine', () => true);
    expect(await screenInstructions('docs', 'Use search.', listing, held.deps)).toBe('These instructions are withheld by pinning: their upstream is quarantined until a changed definition is approved.');
    expect(held.events).toEqual(['scan tools', 'scan prompts', 'quarantined?']);
    const free = deps('quarantine', async () => false);
    expect(await screenInstructions('docs', 'Use search.', listing, free.deps)).toBe('Use search.');
  });

  it('withholds them when the pins cannot be read', async () => {
    const { deps: d } = deps('quarantine', () => Promise.reject(new Error('store down')));
    expect(await screenInstructions('docs', 'Use search.', listing, d)).toMatch(/withheld by pinning: their upstream is quarantined/);
  });

  it('hide does not ask about quarantine', async () => {
    const { events, deps: d } = deps('hide', () => true);
    expect(await screenInstructions('docs', 'Use search.', listing, d)).toBe('Use search.');
    expect(events).toEqual([]);
  });
});
