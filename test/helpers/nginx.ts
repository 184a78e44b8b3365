// Debian's nginx as the load balancer in front of gateway replicas: round-robin, no affinity,
// pooled connections, with a config, pid file and logs of its own in a temp dir, in the
// foreground (daemon off) as a child process. It is configured as docs/deploy.md tells an
// operator to: a request a draining replica answered 503 unread, or one on a connection it
// reset unread, goes to the next replica; one that is stopped refuses connections and nginx
// tries the next.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { poll } from './cli.js';
import { stopChild } from './processes.js';
import { freePort } from './redis.js';

export const NGINX = '/usr/sbin/nginx';

export interface Nginx {
  /** The MCP endpoint through the balancer. */
  url: URL;
  /** Requests it answered with `status` for `method` (from its access log); `resuming`: only those with a Last-Event-ID. */
  answered(method: string, status: number, resuming?: boolean): Promise<number>;
  /** Requests it sent to more than one replica, by what the replicas before the last answered ('503', '502' for a reset, '504'). */
  resent(): Promise<Record<string, number>>;
  /** Its error log's lines at warn level and above (what it met at the replicas), for a failure's message. */
  problems(): Promise<string[]>;
  close(): Promise<void>;
}

function configOf(dir: string, port: number, backends: readonly string[]): string {
  const servers = backends.map((backend) => `    server ${backend} max_fails=0;`).join('\n');
  return `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
events { worker_connections 4096; }
http {
  log_format fleet '$request_method $status upstream=$upstream_status last-event-id=$http_last_event_id';
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
      # A replica that refuses the connection (killed, stopped) is skipped; so is a draining one:
      # it answers 503 to what it has not read, and resets unread what it holds when it exits.
      # non_idempotent lets a POST go to the next replica in those cases (docs/deploy.md says
      # why that is safe and the one case it is not). max_fails=0: a replica is never benched
      # for a while after a failure, so a restarted one serves at once (as a pod does once
      # ready); a stopped one costs a refused connect per request.
      proxy_next_upstream error timeout http_503 non_idempotent;
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
  try {
    await poll(() => fetch(`http://127.0.0.1:${port}/`).then((res) => (res.body?.cancel(), true), () => undefined), 'nginx to listen', 15_000);
  } catch (err) {
    await stopChild(child);
    throw new Error(`nginx did not start: ${(err as Error).message}; ${await errors()}`);
  }
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    async answered(method, status, resuming = false) {
      const log = await readFile(join(dir, 'access.log'), 'utf8').catch(() => '');
      return log.split('\n').filter((line) => line.startsWith(`${method} ${status} `) && (!resuming || !line.endsWith('last-event-id=-'))).length;
    },
    async resent() {
      const log = await readFile(join(dir, 'access.log'), 'utf8').catch(() => '');
      const counts: Record<string, number> = {};
      for (const [, tried] of log.matchAll(/ upstream=([^ ]+(?:, [^ ]+)+) /g)) {
        for (const status of tried!.split(', ').slice(0, -1)) counts[status] = (counts[status] ?? 0) + 1;
      }
      return counts;
    },
    problems: async () => (await errors()).split('\n').filter((line) => /\[(warn|error|crit|alert|emerg)\]/.test(line)),
    close: () => stopChild(child),
  };
}
