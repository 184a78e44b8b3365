// Where each thing is served on the main listener: listen.path, metrics.path and endpoints[].path
// must not meet each other or the gateway's own routes. The probes' and the scraper's paths skip
// the Host check and are served while draining, so an MCP endpoint there would be too.

interface PathsView {
  listen: { path: string };
  metrics: { enabled: boolean; port?: number | undefined; path: string };
  endpoints: readonly { path: string }[];
}

/** What the gateway serves at `path` besides MCP, when it does: probes, OAuth and connect pages, admin routes. */
export function reservedPath(path: string): string | undefined {
  if (path === '/healthz' || path === '/readyz') return 'a health probe';
  const under = (prefix: string): boolean => path === prefix || path.startsWith(`${prefix}/`);
  if (under('/.well-known')) return 'metadata documents';
  if (under('/oauth')) return 'the front door';
  if (under('/connect')) return 'the connect pages';
  if (under('/admin')) return 'the admin routes';
  return undefined;
}

/** Each path that meets another or a reserved one, with its key path. */
export function servedPathIssues(config: PathsView): Array<{ path: (string | number)[]; message: string }> {
  const issues: Array<{ path: (string | number)[]; message: string }> = [];
  const listenPath = config.listen.path;
  const listenReserved = reservedPath(listenPath);
  if (listenReserved) issues.push({ path: ['listen', 'path'], message: `${listenPath} is reserved (${listenReserved})` });
  const metricsPath = config.metrics.path;
  if (config.metrics.enabled && config.metrics.port === undefined) {
    const taken = metricsPath === listenPath ? 'listen.path' : reservedPath(metricsPath);
    if (taken) issues.push({ path: ['metrics', 'path'], message: `${metricsPath} is already served on the main listener (${taken}); choose another path, or a metrics.port` });
  }
  const served = new Set([listenPath]);
  config.endpoints.forEach((entry, i) => {
    if (served.has(entry.path)) issues.push({ path: ['endpoints', i, 'path'], message: `${entry.path} is already served` });
    served.add(entry.path);
    if (reservedPath(entry.path) || entry.path === metricsPath) issues.push({ path: ['endpoints', i, 'path'], message: `${entry.path} is reserved` });
  });
  return issues;
}
