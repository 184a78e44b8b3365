// Debian's nginx as the load balancer in front of gateway replicas: round-robin, no affinity,
// pooled connections, with a config, pid file and logs of its own in a temp dir, in the
// foreground (daemon off) as a child process. It is configured as docs/deploy.md tells an
// operator to: a request it could not send (the replica refused the connection) goes to the next
// replica, and so does a GET a draining replica answered 503; a POST that reached a replica is
// never sent again. Its server list changes as a Service's endpoints do: the config rewritten,
// then `nginx -s reload`.
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { poll } from './cli.js';
import { stopChild } from './processes.js';
import { freePort } from './redis.js';

export const NGINX = '/usr/sbin/nginx';
const run = promisify(execFile);

export interface Nginx {
  /** The MCP endpoint through the balancer. */
  url: URL;
  /** Requests it answered with `status` for `method` (from its access log); `resuming`: only those with a Last-Event-ID. */
  answered(method: string, status: number, resuming?: boolean): Promise<number>;
  /**
   * The same, once at least `count` are in its access log: nginx writes a request's line after
   * it sent the answer, so a client that has the answer may read the log before the line is in.
   */
  answeredAtLeast(method: string, status: number, count: number): Promise<number>;
  /** Requests it sent to more than one replica, by what the replicas before the last answered ('503', '502' for a reset, '504'). */
  resent(): Promise<Record<string, number>>;
  /** Its error log's lines at warn level and above (what it met at the replicas), for a failure's message. */
  problems(): Promise<string[]>;
  /**
   * Rewrites its server list and reloads; resolves once the new list is in effect: a new worker
   * runs it and every worker of the old list has stopped taking requests (it finishes those it
   * holds, GET streams included, and closes its idle connections). `backups` serve only when
   * every one of `backends` failed.
   */
  setBackends(backends: readonly string[], backups?: readonly string[]): Promise<void>;
  /** Resolves once a request was answered by `backend` (from its access log). */
  reached(backend: string): Promise<void>;
  close(): Promise<void>;
}

function configOf(dir: string, port: number, backends: readonly string[], backups: readonly string[] = []): string {
  const servers = [...backends.map((backend) => `    server ${backend} max_fails=0;`), ...backups.map((backend) => `    server ${backend} max_fails=0 backup;`)].join('\n');
  return `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
events { worker_connections 4096; }
http {
  log_format fleet '$request_method $status upstream=$upstream_status last-event-id=$http_last_event_id addr=$upstream_addr';
  access_log ${dir}/access.log fleet;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  upstream gateways {
${servers}
    keepalive 16;
  }
  server {
    listen 127.0.0.1:${port};
    # Each answer closes its client connection. A reload (the test's endpoints update) closes
    # idle client connections, and a client's next request sent on one as it closes is lost
    # ("other side closed"); ingress-nginx changes endpoints without a reload.
    keepalive_timeout 0;
    location / {
      proxy_pass http://gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      # SSE: every event as it comes; long-lived GET streams.
      proxy_buffering off;
      proxy_read_timeout 1h;
      # Requests are read whole before they go out (the default), so one can be sent again.
      proxy_request_buffering on;
      # A replica that refuses the connection (killed, stopped) is skipped, POSTs too: nothing
      # was sent. A GET a draining replica answered 503 goes to the next one; a POST that was
      # sent is never sent again (no non_idempotent: a crashed replica may have run it;
      # docs/deploy.md says why). max_fails=0: a replica is never benched for a while after a
      # failure, so a restarted one serves at once (as a pod does once ready); a stopped one
      # costs a refused connect per request.
      proxy_next_upstream error timeout http_503;
    }
  }
}
`;
}

export async function startNginx(dir: string, backends: readonly string[]): Promise<Nginx> {
  await mkdir(join(dir, 'tmp'), { recursive: true });
  const port = await freePort();
  const file = join(dir, 'nginx.conf');
  await writeFile(file, configOf(dir, port, backends));
  const child: ChildProcessWithoutNullStreams = spawn(NGINX, ['-p', dir, '-c', file, '-e', join(dir, 'error.log')], { stdio: 'pipe' });
  child.on('error', () => {});
  const errors = (): Promise<string> => readFile(join(dir, 'error.log'), 'utf8').catch(() => '');
  const accessLog = (): Promise<string> => readFile(join(dir, 'access.log'), 'utf8').catch(() => '');
  try {
    await poll(() => fetch(`http://127.0.0.1:${port}/`).then((res) => (res.body?.cancel(), true), () => undefined), 'nginx to listen', 15_000);
  } catch (err) {
    await stopChild(child);
    throw new Error(`nginx did not start: ${(err as Error).message}; ${await errors()}`);
  }
  async function answered(method: string, status: number, resuming = false): Promise<number> {
    const log = await accessLog();
    return log.split('\n').filter((line) => line.startsWith(`${method} ${status} `) && (!resuming || !line.includes(' last-event-id=- '))).length;
  }
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    answered,
    async answeredAtLeast(method, status, count) {
      return poll(
        async () => {
          const found = await answered(method, status);
          return found >= count ? found : undefined;
        },
        `${count} ${method} answered ${status} in the access log`,
        15_000,
        10,
      );
    },
    async resent() {
      const log = await accessLog();
      const counts: Record<string, number> = {};
      for (const [, tried] of log.matchAll(/ upstream=([^ ]+(?:, [^ ]+)+) /g)) {
        for (const status of tried!.split(', ').slice(0, -1)) counts[status] = (counts[status] ?? 0) + 1;
      }
      return counts;
    },
    problems: async () => (await errors()).split('\n').filter((line) => /\[(warn|error|crit|alert|emerg)\]/.test(line)),
    async setBackends(backends, backups) {
      const before = await workersOf(child.pid!);
      await writeFile(file, configOf(dir, port, backends, backups));
      await run(NGINX, ['-p', dir, '-c', file, '-e', join(dir, 'error.log'), '-s', 'reload']);
      await poll(
        async () => {
          const now = await workersOf(child.pid!);
          const started = now.some((pid) => !before.includes(pid));
          const old = await Promise.all(before.filter((pid) => now.includes(pid)).map(titleOf));
          return started && old.every((title) => title === undefined || title.includes('shutting down')) ? true : undefined;
        },
        'nginx to run its new server list',
        15_000,
        10,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}; ${await errors()}`);
      });
    },
    async reached(backend) {
      await poll(async () => ((await accessLog()).split('\n').some((line) => line.split(' addr=')[1]?.split(', ').at(-1) === backend) ? true : undefined), `a request answered by ${backend}`, 15_000, 10);
    },
    close: () => stopChild(child),
  };
}

/** The worker processes of nginx's master process `pid` (its children), old ones still finishing included. */
async function workersOf(pid: number): Promise<number[]> {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8');
  return children.split(' ').filter(Boolean).map(Number);
}

/** A process's title (an nginx worker told to quit says "worker process is shutting down"); undefined once it is gone. */
function titleOf(pid: number): Promise<string | undefined> {
  return readFile(`/proc/${pid}/cmdline`, 'utf8').then(
    (title) => title || undefined,
    () => undefined,
  );
}
