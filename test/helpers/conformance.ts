// The MCP conformance suite (@modelcontextprotocol/conformance) as a child process: its `server`
// command against one URL at one spec version, run in a temporary directory with `-o results`
// (0.2.0-alpha.12 writes one results/server-<scenario>-<time>/checks.json per scenario, and only
// when given an output directory); the checks are read back and the directory removed.
// On Node 20 the suite's dist needs a resolve hook for `fs.globSync` (conformance-node20/).
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURES, NODE, ROOT } from './paths.js';
import { stopChild, waitForLine } from './processes.js';

export const CONFORMANCE_BIN = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const NODE20_HOOKS = join(ROOT, 'test/helpers/conformance-node20/register.mjs');

/** The two protocol eras the suite can speak: the sessions era and the stateless revision. */
export type SpecVersion = '2025-11-25' | '2026-07-28';
export const SPEC_VERSIONS: readonly SpecVersion[] = ['2025-11-25', '2026-07-28'];

/** One check as the suite writes it to checks.json. INFO and SKIPPED checks neither pass nor fail. */
export interface ConformanceCheck {
  id: string;
  name?: string;
  description?: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
  details?: unknown;
}

export interface ScenarioResult {
  scenario: string;
  checks: ConformanceCheck[];
  passed: number;
  failed: number;
  warnings: number;
}

export interface SuiteRun {
  url: string;
  specVersion: SpecVersion;
  scenarios: ScenarioResult[];
  /** The CLI's exit code: 1 when any check failed. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

export interface RunOptions {
  /** `--suite`; `all` by default. */
  suite?: 'all' | 'active' | 'draft' | 'pending';
  /** `--scenario`: one scenario instead of a suite. */
  scenario?: string;
  /** The suite's per-scenario timeout (`--timeout`). */
  scenarioTimeoutMs?: number;
  /** Bound on the whole run; the child is killed after it. */
  timeoutMs?: number;
  verbose?: boolean;
}

/** Node 22 has fs.globSync; older versions load the suite through the hook. */
function nodeArgs(): string[] {
  const major = Number(process.versions.node.split('.')[0]);
  return major >= 22 ? [] : ['--import', NODE20_HOOKS];
}

/** Runs `conformance server --url URL --spec-version V` and returns its checks per scenario. */
export async function runConformance(url: string, specVersion: SpecVersion, options: RunOptions = {}): Promise<SuiteRun> {
  const cwd = await mkdtemp(join(tmpdir(), 'switchyard-conformance-'));
  const started = Date.now();
  try {
    const args = [...nodeArgs(), CONFORMANCE_BIN, 'server', '--url', url, '--spec-version', specVersion, '-o', 'results'];
    args.push(...(options.scenario !== undefined ? ['--scenario', options.scenario] : ['--suite', options.suite ?? 'all']));
    if (options.scenarioTimeoutMs !== undefined) args.push('--timeout', String(options.scenarioTimeoutMs));
    if (options.verbose) args.push('--verbose');
    const { exitCode, stdout, stderr } = await runChild(args, cwd, options.timeoutMs ?? 180_000);
    const ran = options.scenario !== undefined ? [options.scenario] : [...stdout.matchAll(/^=== Running scenario: (\S+) ===$/gm)].map((m) => m[1]!);
    if (ran.length === 0 || (options.scenario === undefined && !stdout.includes('=== SUMMARY ==='))) {
      throw new Error(`the conformance suite did not run (exit ${exitCode}); stderr: ${stderr.slice(-2_000)}; stdout: ${stdout.slice(-2_000)}`);
    }
    const dirs = await readdir(join(cwd, 'results')).catch(() => [] as string[]);
    const scenarios: ScenarioResult[] = [];
    for (const scenario of ran) {
      // Each scenario's directory is `server-<scenario>-<ISO time with : and . as ->`.
      const dir = dirs.find((name) => name.startsWith(`server-${scenario}-`) && /^\d{4}-\d{2}-\d{2}T[\d-]+Z$/.test(name.slice(`server-${scenario}-`.length)));
      const written = dir === undefined ? undefined : await readFile(join(cwd, 'results', dir, 'checks.json'), 'utf8').catch(() => undefined);
      const checks: ConformanceCheck[] =
        written !== undefined
          ? (JSON.parse(written) as ConformanceCheck[])
          : stdout.includes(`SKIPPED: scenario '${scenario}'`)
            ? [] // --scenario at a version the scenario does not apply to
            : // The suite writes nothing for a scenario that threw; it counts as one failed check, as the suite counts it.
              [{ id: scenario, status: 'FAILURE', errorMessage: `no checks.json: the scenario crashed (stderr: ${stderr.slice(-500)})` }];
      scenarios.push(summarize(scenario, checks));
    }
    return { url, specVersion, scenarios, exitCode, stdout, stderr, durationMs: Date.now() - started };
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
}

export function summarize(scenario: string, checks: ConformanceCheck[]): ScenarioResult {
  const count = (status: ConformanceCheck['status']): number => checks.filter((check) => check.status === status).length;
  return { scenario, checks, passed: count('SUCCESS'), failed: count('FAILURE'), warnings: count('WARNING') };
}

/** The failing checks of a run, one line each: `scenario: check-id: message`. */
export function failures(run: SuiteRun, statuses: ConformanceCheck['status'][] = ['FAILURE']): string[] {
  return run.scenarios.flatMap((s) => s.checks.filter((c) => statuses.includes(c.status)).map((c) => `${s.scenario}: ${c.id}: ${(c.errorMessage ?? '').split('\n')[0]!.slice(0, 300)}`));
}

function runChild(args: string[], cwd: string, timeoutMs: number): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the conformance suite did not finish within ${timeoutMs} ms; stdout: ${stdout.slice(-2_000)}`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ exitCode: code, stdout, stderr });
    });
  });
}

/** test/fixtures/conformance-server.mjs over HTTP in its own process on a free port. */
export async function startConformanceFixture(): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(NODE, [join(FIXTURES, 'conformance-server.mjs')], { stdio: 'pipe' });
  try {
    const [, url] = await waitForLine(child, /^listening on (\S+)$/);
    return { url: url!, close: () => stopChild(child) };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}

/** The upstreams the matrix runs against. */
export type UpstreamName = 'fixture' | 'everything';

/**
 * Checks no gateway can pass although the upstream passes them directly, for a reason that is
 * inherent to being a gateway rather than a fault of Switchyard. They are left out of both
 * counts of the comparison (the check still runs and still shows in the table). Keep this
 * minimal: every entry needs a reason that names what the check observes and why no gateway
 * could make it observe the upstream's behaviour.
 */
export interface Exclusion {
  upstream: UpstreamName;
  specVersions: readonly SpecVersion[];
  scenario: string;
  check: string;
  reason: string;
}

export const GATEWAY_EXCLUSIONS: readonly Exclusion[] = [
  {
    // server-everything has no tool by this name. Directly it answers the unknown name with a
    // result ({ isError: true, content: [{ type: 'text', text: 'Unknown tool: …' }] }), and the
    // check only looks for a text block, so it passes. A gateway routes tools/call by the names its
    // upstreams list; a name no upstream lists reaches none, and the gateway itself answers it
    // with the protocol error server/tools.mdx "Error Handling" prescribes for unknown tools
    // (-32602). Forwarding unlisted names blindly would also make a tool hidden by policy
    // distinguishable from an unknown one.
    upstream: 'everything',
    specVersions: ['2025-11-25', '2026-07-28'],
    scenario: 'tools-call-simple-text',
    check: 'tools-call-simple-text',
    reason: 'server-everything lacks test_simple_text and answers the unknown name with an isError result the check accepts; a gateway answers a name no upstream lists with -32602',
  },
  {
    // The same for test_error_handling: the check wants isError: true with a text block, which
    // server-everything's unknown-tool answer happens to be.
    upstream: 'everything',
    specVersions: ['2025-11-25', '2026-07-28'],
    scenario: 'tools-call-error',
    check: 'tools-call-error',
    reason: 'server-everything lacks test_error_handling and answers the unknown name with an isError result the check accepts; a gateway answers a name no upstream lists with -32602',
  },
  {
    // test_reconnection closes the SSE stream of the request it serves and the check expects the
    // client's stream to end before the answer, then the answer after a GET with Last-Event-ID.
    // Through a gateway the stream the tool closes is the gateway-to-upstream hop, which the
    // gateway, as that hop's client, resumes itself (basic/transports.mdx "Resumability and
    // Redelivery"); the client's stream to the gateway is another hop and is not closed by
    // anything the upstream does. The check's own priming-event and retry-field checks are the
    // gateway's to pass and are not excluded.
    upstream: 'fixture',
    specVersions: ['2025-11-25'],
    scenario: 'server-sse-polling',
    check: 'server-sse-disconnect-resume',
    reason: "the upstream closes its own SSE hop to the gateway, which the gateway resumes; the client's hop is not closed by it",
  },
];

/** Whether a check is left out of the comparison for `upstream` at `specVersion`. */
export function isExcluded(upstream: UpstreamName, specVersion: SpecVersion, scenario: string, check: string): boolean {
  return GATEWAY_EXCLUSIONS.some((e) => e.upstream === upstream && e.specVersions.includes(specVersion) && e.scenario === scenario && e.check === check);
}

/** One scenario's passing checks (exclusions left out), run directly against an upstream and through a gateway. */
export interface Comparison {
  scenario: string;
  direct?: ScenarioResult;
  through?: ScenarioResult;
  /** SUCCESS checks that count: those not excluded. */
  directPassed: number;
  throughPassed: number;
  excluded: string[];
}

export function compare(upstream: UpstreamName, direct: SuiteRun, through: SuiteRun): Comparison[] {
  const names = [...new Set([...direct.scenarios.map((s) => s.scenario), ...through.scenarios.map((s) => s.scenario)])];
  const counted = (result: ScenarioResult | undefined): number =>
    result?.checks.filter((c) => c.status === 'SUCCESS' && !isExcluded(upstream, direct.specVersion, result.scenario, c.id)).length ?? 0;
  return names.map((scenario) => {
    const d = direct.scenarios.find((s) => s.scenario === scenario);
    const t = through.scenarios.find((s) => s.scenario === scenario);
    const excluded = GATEWAY_EXCLUSIONS.filter((e) => e.upstream === upstream && e.specVersions.includes(direct.specVersion) && e.scenario === scenario).map((e) => e.check);
    return { scenario, direct: d, through: t, directPassed: counted(d), throughPassed: counted(t), excluded };
  });
}

/** Scenarios that pass fewer (counted) checks through the gateway than directly. */
export function regressions(rows: Comparison[]): Comparison[] {
  return rows.filter((row) => row.throughPassed < row.directPassed);
}

/** A fixed-width table: scenario, then passed/failed directly and through the gateway. */
export function formatTable(title: string, rows: Comparison[]): string {
  const cell = (r?: ScenarioResult): string => (r ? `${r.passed}/${r.failed}${r.warnings ? ` w${r.warnings}` : ''}` : '-');
  const width = Math.max(8, ...rows.map((r) => r.scenario.length));
  const line = (a: string, b: string, c: string, mark = ''): string => `${a.padEnd(width)}  ${b.padStart(9)}  ${c.padStart(9)}  ${mark}`.trimEnd();
  const total = (pick: (r: Comparison) => ScenarioResult | undefined): ScenarioResult => summarize('total', rows.flatMap((r) => pick(r)?.checks ?? []));
  const mark = (r: Comparison): string =>
    [r.throughPassed < r.directPassed ? '<< worse through' : '', r.excluded.length > 0 ? `(not counted: ${r.excluded.join(', ')})` : ''].filter(Boolean).join(' ');
  return [
    title,
    line('scenario', 'direct', 'through', '(passed/failed, wN = N warnings)'),
    ...rows.map((r) => line(r.scenario, cell(r.direct), cell(r.through), mark(r))),
    line('TOTAL', cell(total((r) => r.direct)), cell(total((r) => r.through))),
  ].join('\n');
}
