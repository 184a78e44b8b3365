// The tracing section of `npm run bench` (`--only tracing`): the tools/call path of one gateway
// build with tracing off (no endpoint: no span is made), on with sampleRatio 0 (no request can
// be sampled, so none makes a span; trace context still propagated) and on with sampleRatio 1 (every request's
// SERVER and CLIENT spans exported to an OTLP sink in a process of its own), against the naive
// hop, at C=16 on the HTTP upstream, the targets taking turns as in the throughput section.
// Judges no target: its figures are ratios (bench/README.md, "Tracing").
import { join } from 'node:path';
import { here, start } from './parts.mjs';

export const TRACING_NAMES = { off: 'gateway tracing off', zero: 'gateway tracing ratio 0', on: 'gateway tracing ratio 1' };

/**
 * `gatewayWith(name, extraYaml)` makes a renewable gateway target of the throughput section's
 * config plus `extraYaml`; `alternating`, `pairedRatio` and the slice figures are run.mjs's.
 */
export async function runTracing({ hop, gatewayWith, alternating, pairedRatio, sliceThroughput, sliceCpu, row, say, fmt }) {
  const sink = await start('otlp sink', process.execPath, [join(here, 'otlp-sink.mjs')]);
  const tracing = (ratio) => `tracing: { otlp: { endpoint: "${sink.url}" }, sampleRatio: ${ratio} }\n`;
  const off = await gatewayWith(TRACING_NAMES.off, '');
  const zero = await gatewayWith(TRACING_NAMES.zero, tracing(0));
  const on = await gatewayWith(TRACING_NAMES.on, tracing(1));
  try {
    say('\nTracing, HTTP upstream, C=16, targets in turns (calls/s; CPU per call in µs):');
    const turns = await alternating([hop, off, zero, on]);
    for (const t of [hop, off, zero, on]) say(row(t.name, turns[t.name], 'throughput'));
    for (const t of [hop, off, zero, on]) say(row(`${t.name} CPU`, turns[t.name], 'cpuPerCallUs'));
    // Stopped (drained and closed), the gateways export what their batches still hold.
    await Promise.all([off.stop(), zero.stop(), on.stop()]);
    const exported = await (await fetch(new URL('/count', sink.url))).json();
    if (exported.requests === 0) throw new Error('tracing: the gateway with sampleRatio 1 exported no span');
    const ratios = {
      offOverHop: { throughput: pairedRatio(turns, off.name, hop.name, sliceThroughput), cpu: pairedRatio(turns, off.name, hop.name, sliceCpu) },
      zeroOverOff: { throughput: pairedRatio(turns, zero.name, off.name, sliceThroughput), cpu: pairedRatio(turns, zero.name, off.name, sliceCpu) },
      onOverOff: { throughput: pairedRatio(turns, on.name, off.name, sliceThroughput), cpu: pairedRatio(turns, on.name, off.name, sliceCpu) },
    };
    say('Ratios, turn by turn (median):           throughput   CPU per call');
    say(`  tracing off / naive hop                  ${fmt(ratios.offOverHop.throughput).padStart(6)}       ${fmt(ratios.offOverHop.cpu)}`);
    say(`  tracing on, ratio 0 / tracing off        ${fmt(ratios.zeroOverOff.throughput).padStart(6)}       ${fmt(ratios.zeroOverOff.cpu)}`);
    say(`  tracing on, ratio 1 / tracing off        ${fmt(ratios.onOverOff.throughput).padStart(6)}       ${fmt(ratios.onOverOff.cpu)}`);
    say(`  (${exported.requests} OTLP exports, ${(exported.bytes / 1e6).toFixed(1)} MB, from the ratio-1 gateway)`);
    return { turns, ratios, exported };
  } finally {
    await Promise.all([off.stop(), zero.stop(), on.stop(), sink.stop()]);
  }
}
