// The schema of per-team policy and of the endpoints beside the main one (part of configSchema,
// schema.ts): who is in a team, what its selectors allow and deny, its views of tools, and what
// an endpoint of `endpoints[]` shows and to whom.
import { z } from 'zod';

const teamMatch = z.union([
  /** A JWT claim (dotted path for nested claims) equal to, or an array containing, the value. */
  z.strictObject({
    claim: z.string().min(1).describe('A JWT claim (dotted path for nested claims) that must equal, or be an array containing, `value`.'),
    value: z.union([z.string(), z.number(), z.boolean()]).describe('The value `claim` must equal or contain.'),
  }),
  /** One principal by id (`<issuer>|<sub>` or `apikey:<id>`). */
  z.strictObject({ principal: z.string().min(1).describe('One principal by id (`<issuer>|<sub>` or `apikey:<id>`).') }),
]);

const toolView = z.strictObject({
  /** The name this team sees the tool under (it shadows any other tool of that name). */
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must match ^[A-Za-z0-9_-]{1,64}$').optional().describe('The name this team sees the tool under (it shadows any other tool of that name).'),
  title: z.string().optional().describe('The title this team sees.'),
  description: z.string().optional().describe('The description this team sees.'),
  /** Arguments fixed for this team: clients cannot override them and do not see them. */
  pin: z.record(z.string(), z.unknown()).default({}).describe('Arguments fixed for this team: clients cannot override them and do not see them.'),
});

/** The annotations a selector can name (tools.mdx ToolAnnotations); only `true` matches. */
export const ANNOTATION_HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;
const SELECTORS =
  'Globs over namespaced tool and prompt names and resource URIs, `upstream:<name>` (everything of an upstream), or `annotation:<hint>` (tools whose upstream annotations set readOnlyHint, destructiveHint, idempotentHint or openWorldHint to true; a tool without it does not match).';
const selector = z
  .string()
  .min(1)
  .refine((entry) => !entry.startsWith('annotation:') || (ANNOTATION_HINTS as readonly string[]).includes(entry.slice('annotation:'.length)), {
    message: `annotation selectors name one of ${ANNOTATION_HINTS.join(', ')}`,
  });

export const team = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).describe("The team's name, unique among the teams."),
  /** Principals in the team: any of these. API keys name their team themselves. */
  match: z.union([teamMatch, z.array(teamMatch)]).optional().describe('Principals in the team: any of these (one match or a list). API keys name their team themselves.'),
  /** The team of principals that match no team. */
  default: z.boolean().default(false).describe('The team of principals that match no team (at most one team).'),
  /** Globs over namespaced tool and prompt names and resource URIs, `upstream:<name>`, or `annotation:<hint>`. */
  allow: z.array(selector).default(['*']).describe(SELECTORS),
  deny: z.array(selector).default([]).describe('Selectors as in `allow`; deny wins over allow.'),
  /** Per-tool renames, descriptions and pinned arguments, by namespaced tool name. */
  views: z.record(z.string(), toolView).default({}).describe('Per-tool renames, descriptions and pinned arguments, by namespaced tool name.'),
  /** Ask the user (elicitation) before a destructive tool runs; refuse when they cannot be asked. */
  confirm: z.boolean().default(false).describe('Ask the user (elicitation) before a destructive tool runs; refuse when they cannot be asked.'),
});

export const endpoint = z.strictObject({
  path: z
    .string()
    .regex(/^\/[A-Za-z0-9._~\/-]*$/, 'must be an absolute path of plain characters')
    .describe('Where this endpoint is served, beside listen.path (same auth and session rules; a change needs a restart).'),
  teams: z.array(z.string().min(1)).min(1).optional().describe("Only principals of these teams may use it (others get 403); omitted: anyone."),
  allow: z.array(selector).default(['*']).describe(`What it shows, within what the principal's teams see. ${SELECTORS}`),
  deny: z.array(selector).default([]).describe('Selectors as in `allow`; deny wins over allow.'),
  discovery: z.enum(['list', 'search']).default('list').describe('list: tools/list lists every tool; search: tools/list lists `pinned` plus search_tools and call_tool.'),
  pinned: z.array(z.string().min(1)).default([]).describe('Tools (namespaced names, as listed) always listed in search mode, when visible.'),
  instructions: z.string().optional().describe('Prepended to the merged instructions of this endpoint.'),
});

