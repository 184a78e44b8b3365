// The MCP conformance suite (`conformance server --suite all`) at 2025-11-25 and 2026-07-28,
// directly against an upstream and through a gateway fronting it alone and unprefixed: no
// scenario may pass fewer checks through Switchyard than directly (issue 22). Two upstreams:
// test/fixtures/conformance-server.mjs, which implements every scenario in both eras, and
// server-everything, which implements few of them. Checks no gateway can pass are listed, with
// their reasons, in GATEWAY_EXCLUSIONS (test/helpers/conformance.ts).
// `node scripts/conformance.mjs --failures` prints the same matrix as a table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compare,
  failures,
  formatTable,
  regressions,
  runConformance,
  SPEC_VERSIONS,
  startConformanceFixture,
  type Comparison,
  type SuiteRun,
  type UpstreamName,
} from '../helpers/conformance.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startEverythingHttp } from '../helpers/processes.js';

/** One suite run takes 2-8 s; this bounds a direct and a through run together with room to spare. */
const PAIR_TIMEOUT_MS = 120_000;

const UPSTREAMS: { name: UpstreamName; start: () => Promise<{ url: string; close(): Promise<void> }> }[] = [
  { name: 'fixture', start: startConformanceFixture },
  { name: 'everything', start: startEverythingHttp },
];

/** The assertion message: what regressed, then what fails either way, then the whole table. */
function explain(upstream: UpstreamName, direct: SuiteRun, through: SuiteRun, rows: Comparison[]): string {
  const worse = regressions(rows).map((r) => `${r.scenario} (${r.directPassed} passed directly, ${r.throughPassed} through)`);
  const failing = (run: SuiteRun): string => run.scenarios.filter((s) => s.failed > 0).map((s) => s.scenario).join(', ') || 'none';
  return [
    `scenarios passing fewer checks through Switchyard (${upstream} @ ${direct.specVersion}): ${worse.join('; ')}`,
    `failing directly: ${failing(direct)}`,
    `failing through Switchyard: ${failing(through)}`,
    'failed checks through Switchyard:',
    ...failures(through).map((line) => `  ${line}`),
    formatTable('', rows),
  ].join('\n');
}

describe.each(UPSTREAMS)('the conformance suite against $name, directly and through Switchyard', ({ name, start }) => {
  let upstream: { url: string; close(): Promise<void> };
  let gateway: TestGateway;

  beforeAll(async () => {
    upstream = await start();
    gateway = await startGateway({ upstreams: { conf: { http: { url: upstream.url }, prefix: '' } } });
  });

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  describe.each(SPEC_VERSIONS)('at %s', (specVersion) => {
    let direct: SuiteRun;
    let through: SuiteRun;

    beforeAll(async () => {
      direct = await runConformance(upstream.url, specVersion);
      through = await runConformance(gateway.url.href, specVersion);
    }, PAIR_TIMEOUT_MS);

    it('runs the same scenarios both ways', () => {
      expect(through.scenarios.map((s) => s.scenario)).toEqual(direct.scenarios.map((s) => s.scenario));
      expect(direct.scenarios.length).toBeGreaterThan(20);
    });

    it('passes no fewer checks in any scenario through Switchyard than directly', () => {
      const rows = compare(name, direct, through);
      expect(regressions(rows).map((r) => r.scenario), explain(name, direct, through, rows)).toEqual([]);
    });

    if (name === 'fixture') {
      // The baseline is only fair if the fixture does what every scenario asks.
      it('is a complete baseline: the fixture passes every check directly', () => {
        expect(failures(direct, ['FAILURE', 'WARNING'])).toEqual([]);
      });
    }
  });
});
