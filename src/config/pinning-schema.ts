// Config of tool definition pinning (docs/pinning.md): the global block, the per-upstream
// override, and the admin scopes that may approve. Keys are a public contract.
import { z } from 'zod';

const mode = z
  .enum(['off', 'warn', 'hide', 'quarantine'])
  .describe('What drift does: off (nothing pinned); warn (logged, counted, audited; the tool is listed as before); hide (the changed tool is left out of lists and search, and its calls are refused, until approved); quarantine (the whole upstream is hidden until approved).');
const newTools = z
  .enum(['allow', 'pending'])
  .describe('A tool or prompt seen for the first time: allow (pinned at first sight: trust on first use; hidden text still waits under hide and quarantine) or pending (hidden until approved).');

export const pinning = z.strictObject({
  mode: mode.default('off'),
  newTools: newTools.default('allow'),
  store: z.literal('credentials').default('credentials').describe('Where pins live: the credential store (`credentials.store`: a file, or Redis shared by every replica); without a `credentials` block, in memory (this replica only, lost on restart).'),
});

export const upstreamPinning = z.strictObject({
  mode: mode.optional(),
  newTools: newTools.optional(),
});

export const admin = z.strictObject({
  scopes: z.array(z.string().min(1)).min(1).default(['switchyard:admin']).describe('A principal whose token or API key carries one of these scopes may read and decide pins at /admin/pins; anyone else gets 403.'),
});

export type PinningConfig = z.output<typeof pinning>;
export type UpstreamPinningConfig = z.output<typeof upstreamPinning>;
