// An upstream's instructions under pinning. They are not pinned (no digest, nothing to approve),
// but they are screened whenever a session is opened with them: under hide and quarantine, text
// hidden in them (the check a tool's definition gets) withholds them, and under quarantine so does
// the upstream being quarantined, decided after its tools and prompts are screened (a drift they
// bring holds the upstream before its words reach a client). A note stands in their place. Under
// warn they pass and the hidden text is logged; with pinning off nothing is looked at.
import type { Catalog, Listing } from '../names/lists.js';
import { hiddenText } from '../pinning/definition.js';
import type { PinMode } from '../pinning/rules.js';
import type { Logger } from '../util/log.js';

/** What the screen needs of pinning: an upstream's mode (read at each use), and whether it is quarantined now. */
export interface InstructionPins {
  mode(upstream: string): PinMode;
  quarantined(upstream: string): boolean | Promise<boolean>;
}

export interface ScreenDeps {
  catalog: Catalog;
  logger: Logger;
  pins?: InstructionPins;
}

/** `text` as the client may read it: itself, or the note that stands in its place. */
export async function screenInstructions(upstream: string, text: string, listing: Listing, deps: ScreenDeps): Promise<string> {
  const { catalog, logger, pins } = deps;
  const mode = pins?.mode(upstream) ?? 'off';
  if (!pins || mode === 'off') return text;
  const hidden = hiddenText({ instructions: text });
  if (hidden.length > 0 && mode === 'warn') logger.warn('upstream instructions contain hidden text', { upstream, hidden });
  if (hidden.length > 0 && mode !== 'warn') return withheld(`they contain hidden text (${hidden.join(' ')})`);
  if (mode !== 'quarantine') return text;
  await Promise.all((['tools', 'prompts'] as const).map((kind) => catalog.scan(kind, listing, () => {}).catch(() => {})));
  let held: boolean;
  try {
    held = await pins.quarantined(upstream);
  } catch {
    held = true; // its pins could not be read: whether it is quarantined is not known
  }
  return held ? withheld('their upstream is quarantined until a changed definition is approved') : text;
}

function withheld(why: string): string {
  return `These instructions are withheld by pinning: ${why}.`;
}
