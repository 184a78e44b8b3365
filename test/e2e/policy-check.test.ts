// `switchyard check` on per-team configs: each team's names with shortened ones marked, a
// view's collision, per endpoint what tools/list lists and search covers, and an invalid config.
import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';
import { sorted, without } from '../helpers/policy.js';
import { fixture, PAGED_PROMPTS, PAGED_RESOURCES, PAGED_TEMPLATE, PAGED_TOOLS, range, ROGUE_TOOLS, writeConfig } from '../helpers/policy-rig.js';
import { useScratch } from '../helpers/scratch.js';

const dir = useScratch('switchyard-policy-check-');

describe('switchyard check', () => {
  /** `npm run check -- ...args`, to its end (bounded). */
  async function runCheck(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn('npm', ['run', 'check', '--', ...args], { cwd: ROOT, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    try {
      const code = await new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`check did not finish in time; stdout: ${stdout.slice(-500)} stderr: ${stderr.slice(-500)}`)), 25_000);
        child.once('close', (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      return { code, stdout, stderr };
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }

  /** The item lines printed under `team <name>:`. */
  function section(stdout: string, team: string): string[] {
    const lines = stdout.split('\n');
    const start = lines.indexOf(`team ${team}:`);
    expect(start, `no section for team ${team} in:\n${stdout}`).toBeGreaterThanOrEqual(0);
    const body: string[] = [];
    for (const line of lines.slice(start + 1)) {
      if (!line.startsWith('  ')) break;
      body.push(line);
    }
    return body;
  }

  const itemNames = (lines: string[]) => lines.map((l) => /^ {2}(?:tool|prompt|resource|template) (\S+)/.exec(l)?.[1]).filter((n): n is string => n !== undefined);

  const checkConfig = (echoName: string) => ({
    teams: [
      { name: 'payments', allow: ['paged__*', 'paged+*', 'upstream:rogue'], deny: ['*__tool-0*'], views: { paged__echo: { name: echoName } } },
      { name: 'ops', allow: ['upstream:rogue'] },
    ],
    upstreams: { paged: fixture('paged-server.mjs'), rogue: fixture('rogue-server.mjs') },
  });

  const paymentsNames = (echoName: string) => [
    echoName,
    ...without(PAGED_TOOLS, ['paged__echo', ...range(10, (i) => `paged__tool-${i}`)]),
    ...PAGED_PROMPTS,
    ...PAGED_RESOURCES,
    PAGED_TEMPLATE,
    ...ROGUE_TOOLS,
  ];

  it('prints each team\'s names, marks shortened ones, reports a view\'s collision and exits 1', async () => {
    const file = join(await mkdtemp(join(dir(), 'check-')), 'collide.yaml');
    await writeConfig(file, checkConfig('paged__pid'));
    const { code, stdout, stderr } = await runCheck([file, '--connect']);
    expect(stderr).toBe('');
    expect(code).toBe(1);
    expect(stdout.split('\n')[0]).toBe(`config ${file}: valid`);
    const payments = section(stdout, 'payments');
    expect(sorted(itemNames(payments))).toEqual(sorted(paymentsNames('paged__pid')));
    expect(payments).toContain('  COLLISION: tool paged__pid is both paged: echo and paged: pid');
    expect(payments.filter((l) => l.includes('COLLISION'))).toHaveLength(1);
    expect(payments).toContain('  tool paged__has_space_47b5c36f   (shortened from has space)');
    expect(payments).toContain('  tool paged__admin_tools_list_ce33de31   (shortened from admin.tools.list)');
    expect(payments).toContain('  tool paged__a_tool_whose_name_is_far_too_long_for_the_strict_d4a56774   (shortened from a_tool_whose_name_is_far_too_long_for_the_strictest_clients_to_accept_as_is)');
    expect(payments.filter((l) => l.includes('shortened'))).toHaveLength(3);
    expect(sorted(itemNames(section(stdout, 'ops')))).toEqual(sorted(ROGUE_TOOLS));
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('1 collision(s), 0 upstream(s) that could not be listed');
  });

  it('prints per endpoint and team what tools/list lists, what search covers, and the bytes of tools/list in list and search mode', async () => {
    const file = join(await mkdtemp(join(dir(), 'check-')), 'endpoints.yaml');
    const config = checkConfig('pay_echo');
    await writeConfig(file, { ...config, endpoints: [{ path: '/ops/mcp', teams: ['ops'], discovery: 'search', pinned: ['rogue__pid'] }] });
    const { code, stdout, stderr } = await runCheck([file, '--connect']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const lines = stdout.split('\n');
    const at = lines.indexOf('endpoint /ops/mcp, team ops: discovery search');
    expect(at, stdout).toBeGreaterThanOrEqual(0);
    expect(lines[at + 1]).toBe('  lists 3 tool(s): rogue__pid, search_tools, call_tool');
    expect(lines[at + 2]).toMatch(new RegExp(`^ {2}search covers ${ROGUE_TOOLS.length} tool\\(s\\): `));
    expect(sorted(lines[at + 2]!.split(': ')[1]!.split(', '))).toEqual(sorted(ROGUE_TOOLS));
    const bytes = /^ {2}tools\/list bytes: list mode (\d+), search mode (\d+) \((\d+\.\d+)×\)$/.exec(lines[at + 3]!);
    expect(bytes, lines[at + 3]).not.toBeNull();
    expect(Number(bytes![1])).toBeGreaterThan(0);
    // The main endpoint lists in list mode for each team; the ops endpoint is for ops only.
    expect(lines).toContain('endpoint /mcp, team payments: discovery list');
    expect(lines).toContain('endpoint /mcp, team ops: discovery list');
    expect(lines.some((l) => l.startsWith('endpoint /ops/mcp, team payments'))).toBe(false);
  });

  it('exits 0 when no names collide', async () => {
    const file = join(await mkdtemp(join(dir(), 'check-')), 'clean.yaml');
    await writeConfig(file, checkConfig('pay_echo'));
    const { code, stdout, stderr } = await runCheck([file, '--connect']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(sorted(itemNames(section(stdout, 'payments')))).toEqual(sorted(paymentsNames('pay_echo')));
    expect(stdout).not.toContain('COLLISION');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('0 collision(s), 0 upstream(s) that could not be listed');
  });

  it('exits 1 with one line for an invalid config', async () => {
    const file = join(await mkdtemp(join(dir(), 'check-')), 'invalid.yaml');
    const config = checkConfig('pay_echo');
    await writeConfig(file, { ...config, teams: config.teams.map((t) => ({ ...t, default: true })) });
    const { code, stdout, stderr } = await runCheck([file, '--connect']);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(`switchyard: invalid config ${file}: teams: only one team may be the default (payments, ops)\n`);
  });
});
