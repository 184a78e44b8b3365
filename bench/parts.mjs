// What the bench's drivers share (run.mjs, ab.mjs): starting and stopping the processes under
// test, the load generator in a process of its own, the gateway's config, and a JWKS server
// with a token signed by its key; the target of the diagnostics that watch one process (serveTarget).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export const here = dirname(fileURLToPath(import.meta.url));
export const root = dirname(here);

const children = new Set();

/** Starts a server that prints `listening on URL` when ready. */
export function start(name, command, args, env = {}) {
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not start within 60 s\n${stderr}`)), 60_000);
    const fail = (err) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    };
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (\S+)/.exec(out);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.resume();
      resolve({
        name,
        url: match[1],
        pid: child.pid,
        /** What it prints from here on (a diagnostic flag's lines, such as --trace-gc's). */
        output: child.stdout,
        stop: () => stop(child),
      });
    });
    child.on('exit', (code) => fail(new Error(`${name} exited (${code}) before listening\n${stderr}`)));
  });
}

/**
 * A target served by a process that `make` starts; `renew()` replaces the process with a fresh
 * one (the drivers do, each round).
 */
export async function renewable(make, extra = {}) {
  const target = { ...(await make()), ...extra };
  target.renew = async () => {
    await target.stop();
    Object.assign(target, await make());
  };
  return target;
}

function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      children.delete(child);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Stops every process started here that is still running. */
export function stopAll() {
  return Promise.all([...children].map(stop));
}

/** Runs the load generator in its own process; resolves to its JSON summary. */
export function loadgen(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, 'loadgen.mjs'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    children.add(child);
    let out = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 10 * 60_000);
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('exit', (code) => {
      clearTimeout(timer);
      children.delete(child);
      try {
        if (code !== 0) throw new Error(`loadgen exited ${code}`);
        resolve(JSON.parse(out.trim().split('\n').at(-1)));
      } catch (err) {
        reject(new Error(`loadgen ${args.join(' ')}: ${err.message}\n${out}`));
      }
    });
  });
}

/** Compiles the gateway into `outDir` (as the image does: `node dist/main.js`). */
export function build(outDir) {
  return new Promise((resolve, reject) => {
    const tsc = spawn(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json'), '--outDir', outDir], { cwd: root, stdio: 'inherit' });
    tsc.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the build failed (${code})`))));
  });
}

/** A JWKS server on loopback and a token (ES256, 2 h) its key signed for the gateway's resource. */
export async function authServer() {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256', use: 'sig' };
  const server = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const resource = 'http://127.0.0.1/mcp';
  const token = await new SignJWT({ scope: 'mcp' })
    .setProtectedHeader({ alg: 'ES256', kid: 'bench' })
    .setIssuer(issuer)
    .setSubject('bench')
    .setAudience(resource)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(privateKey);
  return { issuer, jwksUri: `${issuer}/jwks`, resource, token, close: () => new Promise((resolve) => server.close(resolve)) };
}

/**
 * gateway.yaml for a bench gateway: `upstreams` as { id: spec }, room for `sessions` sessions,
 * warnings only, no probes; `metrics` and `auth` (from authServer()) switch those on.
 */
export function gatewayConfig(upstreams, { sessions, metrics = false, auth }) {
  const lines = ['upstreams:'];
  for (const [id, spec] of Object.entries(upstreams)) lines.push(`  ${id}: ${JSON.stringify(spec)}`);
  lines.push(`sessions: { max: ${sessions}, maxPerPrincipal: ${sessions} }`, 'logging: { level: warn }', 'health: { probeInterval: 0 }');
  if (metrics) lines.push('metrics: { enabled: true }');
  if (auth) lines.push(`auth: { oauth: { issuer: "${auth.issuer}", jwksUri: "${auth.jwksUri}", resource: "${auth.resource}" } }`);
  return `${lines.join('\n')}\n`;
}

/** The median of `xs`. */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * A diagnostic's target (gc.mjs and bench/experiments/): the compiled gateway in `buildDir`, or
 * the lean floor (`target` 'floor'), served by `gc.mjs --serve` in a process of its own started
 * with `nodeFlags`, behind `upstreamUrl`, its stdout kept. `load(duration)` runs the load
 * generator against it (`sessions` sessions, 16 by default, of a `version` client, 2025-06-18 by
 * default; C=16); `measured(duration)` does so between the MEASURE and DONE marks and resolves
 * to loadgen's summary and what the target printed in between.
 */
export async function serveTarget(target, buildDir, upstreamUrl, nodeFlags = [], { sessions = 16, version = '2025-06-18' } = {}) {
  const child = spawn(process.execPath, [...nodeFlags, join(here, 'gc.mjs'), '--target', target, '--build', buildDir, '--serve', upstreamUrl], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.add(child);
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`the ${target} target exited (${code}) before printing what was waited for`);
  });
  exited.catch(() => {}); // awaited only while something is waited for
  const until = async (text) => {
    while (!out.includes(text)) await Promise.race([once(child.stdout, 'data'), exited]);
  };
  await until('listening on ');
  const url = /listening on (\S+)/.exec(out)[1];
  const load = (duration) => loadgen(['--url', url, '--tool', target === 'floor' ? 'echo' : 'b__echo', '--duration', String(duration), '--sessions', String(sessions), '--protocol-version', version]);
  return {
    pid: child.pid,
    load,
    async measured(duration) {
      child.stdin.write('MEASURE\n');
      await until('MEASURE\n');
      const summary = await load(duration);
      child.stdin.write('DONE\n');
      await until('DONE\n');
      return { summary, printed: out.slice(out.indexOf('MEASURE\n'), out.indexOf('DONE\n')) };
    },
  };
}
