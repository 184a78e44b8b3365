// The MCP conformance suite (`server --suite all`) at 2025-11-25 and 2026-07-28, run directly
// against two upstreams (test/fixtures/conformance-server.mjs and server-everything, both over
// HTTP) and through a Switchyard gateway fronting each alone and unprefixed; prints, per upstream
// and version, each scenario's passed/failed checks directly and through, and the totals.
// Exits 1 when any scenario passes fewer checks through Switchyard than directly, leaving out
// the checks no gateway can pass (GATEWAY_EXCLUSIONS in test/helpers/conformance.ts).
//   node scripts/conformance.mjs [--upstream fixture|everything] [--version 2025-11-25|2026-07-28]
//                                [--scenario ID] [--failures]   (also list every failing check)
// Runs with plain node (it registers tsx itself to load the TypeScript test helpers).
import { register } from 'tsx/esm/api';

register();
const { compare, failures, formatTable, regressions, runConformance, SPEC_VERSIONS, startConformanceFixture } = await import('../test/helpers/conformance.ts');
const { startGateway } = await import('../test/helpers/gateway.ts');
const { startEverythingHttp } = await import('../test/helpers/processes.ts');

const UPSTREAMS = { fixture: startConformanceFixture, everything: startEverythingHttp };

function option(name) {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? undefined : process.argv[at + 1];
}
const only = option('upstream');
const version = option('version');
const scenario = option('scenario');
const showFailures = process.argv.includes('--failures');
if ((only && !(only in UPSTREAMS)) || (version && !SPEC_VERSIONS.includes(version))) {
  process.stderr.write('usage: node scripts/conformance.mjs [--upstream fixture|everything] [--version 2025-11-25|2026-07-28] [--scenario ID] [--failures]\n');
  process.exit(2);
}

let worse = 0;
for (const [name, start] of Object.entries(UPSTREAMS)) {
  if (only && only !== name) continue;
  const upstream = await start();
  const gateway = await startGateway({ upstreams: { conf: { http: { url: upstream.url }, prefix: '' } } });
  try {
    for (const specVersion of version ? [version] : SPEC_VERSIONS) {
      const options = scenario ? { scenario } : {};
      const direct = await runConformance(upstream.url, specVersion, options);
      const through = await runConformance(gateway.url.href, specVersion, options);
      const rows = compare(name, direct, through);
      worse += regressions(rows).length;
      process.stdout.write(`${formatTable(`\n${name} @ ${specVersion} (direct ${(direct.durationMs / 1000).toFixed(1)} s, through ${(through.durationMs / 1000).toFixed(1)} s)`, rows)}\n`);
      if (showFailures) {
        for (const [label, run] of [['direct', direct], ['through', through]]) {
          for (const line of failures(run, ['FAILURE', 'WARNING'])) process.stdout.write(`  ${label}: ${line}\n`);
        }
      }
    }
  } finally {
    await gateway.close();
    await upstream.close();
  }
}
process.stdout.write(worse === 0 ? '\nno scenario scores lower through Switchyard\n' : `\n${worse} scenario run(s) score lower through Switchyard\n`);
process.exit(worse === 0 ? 0 : 1);
