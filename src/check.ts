// `switchyard check FILE [--connect]`: validates a config and shows what each team would get.
// Without --connect it reports the config as written; with it, it starts every upstream once,
// reads its lists and prints, per team, the exposed names, the names shortened to fit, and
// collisions (two items under one name); then, per endpoint and team, what tools/list lists,
// what search covers, and the bytes of tools/list in list mode against search mode. Exit 0
// when all is well, 1 on any error.
import { Agent } from 'undici';
import type { Config } from './config/schema.js';
import { secretsOf } from './config/secrets.js';
import { isObject, type JsonObject } from './mcp/jsonrpc.js';
import { Metrics } from './metrics/metrics.js';
import { Policy } from './policy/policy.js';
import { Catalog, LIST_KINDS, type ListKind } from './names/lists.js';
import { NamespaceCodec } from './names/namespace.js';
import { shapeItem } from './router/shape.js';
import { searchModeTools } from './router/search.js';
import { UpstreamPool } from './upstream/pool.js';
import { silentLogger } from './util/log.js';
import { Redactor } from './util/redact.js';
import { LATEST_VERSION } from './mcp/versions.js';

export interface CheckOptions {
  connect: boolean;
  baseEnv: Readonly<Record<string, string | undefined>>;
  print: (line: string) => void;
}

/** Declares every client capability, so capability-gated tools are listed too. */
const EVERY_CAPABILITY = { sampling: {}, elicitation: {}, roots: { listChanged: true } };

export async function checkConfig(file: string, config: Config, options: CheckOptions): Promise<number> {
  // What is printed may carry the config's secrets (an upstream URL's password or key): hidden as in the logs.
  const redactor = new Redactor(secretsOf(config));
  const print = (line: string): void => options.print(redactor.redact(line));
  const prefixes = new Map(Object.entries(config.upstreams).map(([name, entry]) => [name, entry.prefix ?? name]));
  const codec = new NamespaceCodec(config.namespacing, [...prefixes].map(([upstream, prefix]) => ({ upstream, prefix })));
  const policy = new Policy(config.teams, { separator: config.namespacing.separator, prefixes }, config.endpoints);
  print(`config ${file}: valid`);
  for (const [name, entry] of Object.entries(config.upstreams)) {
    const how = entry.stdio ? `stdio: ${entry.stdio.command} ${entry.stdio.args.join(' ')}` : `${entry.http!.transport}: ${entry.http!.url}`;
    print(`upstream ${name} (prefix "${prefixes.get(name)}") ${how}`);
  }
  const teams = policy.enabled ? policy.teamNames : ['(everyone: no teams configured)'];
  if (!options.connect) {
    for (const team of config.teams ?? []) {
      print(`team ${team.name}${team.default ? ' (default)' : ''}: allow ${team.allow.join(', ') || '(nothing)'}; deny ${team.deny.join(', ') || '(nothing)'}; ${Object.keys(team.views).length} views${team.confirm ? '; confirms destructive tools' : ''}`);
    }
    for (const endpoint of config.endpoints) {
      print(
        `endpoint ${endpoint.path}: teams ${endpoint.teams?.join(', ') ?? '(anyone)'}; allow ${endpoint.allow.join(', ') || '(nothing)'}; deny ${endpoint.deny.join(', ') || '(nothing)'}; discovery ${endpoint.discovery}${endpoint.pinned.length > 0 ? `; pinned ${endpoint.pinned.join(', ')}` : ''}`,
      );
    }
    print('names: run with --connect to start the upstreams and list what each team sees');
    return 0;
  }

  const dispatcher = new Agent();
  const pool = new UpstreamPool(config.upstreams, { dispatcher, logger: silentLogger, baseEnv: options.baseEnv, metrics: new Metrics(prefixes.keys(), { serve: false }) });
  const catalog = new Catalog(codec, silentLogger);
  const listed = new Map<string, { kind: ListKind; item: JsonObject; original: string }[]>();
  let failed = 0;
  try {
    await Promise.all(
      pool.names.map(async (name) => {
        try {
          const client = await pool.open(name, { protocolVersion: LATEST_VERSION, capabilities: EVERY_CAPABILITY, clientInfo: { name: 'switchyard-check', version: '1' } });
          const items: { kind: ListKind; item: JsonObject; original: string }[] = [];
          for (const kind of ['tools', 'prompts', 'resources', 'resourceTemplates'] as const) {
            await catalog.scan(kind, client, (page) => page.items.forEach((item, i) => items.push({ kind, item, original: page.originals[i]! })));
          }
          listed.set(name, items);
          await client.close();
        } catch (err) {
          failed++;
          print(`upstream ${name}: cannot list (${(err as Error).message})`);
        }
      }),
    );
  } finally {
    await pool.close();
    await dispatcher.destroy();
  }

  let collisions = 0;
  for (const team of teams) {
    const access = policy.enabled ? policy.accessOfTeams([team]) : policy.access(undefined);
    print(`team ${team}:`);
    const seen = new Map<string, string>();
    for (const [upstream, items] of [...listed].sort(([a], [b]) => a.localeCompare(b))) {
      for (const { kind, item, original } of items) {
        const shown = shapeItem(access, kind, upstream, item);
        if (!shown) continue;
        const field = LIST_KINDS[kind].field;
        const name = String(shown[field]);
        const label = `${kind === 'resourceTemplates' ? 'template' : kind.slice(0, -1)} ${name}`;
        const from = `${upstream}: ${original}`;
        const shortened = field === 'name' && name !== original && !name.endsWith(`${config.namespacing.separator}${original}`) && isObject(item) && shown.name === item.name;
        print(`  ${label}${shortened ? `   (shortened from ${original})` : ''}`);
        const key = `${kind === 'resourceTemplates' ? 'resources' : kind}:${name}`;
        const other = seen.get(key);
        if (other !== undefined) {
          collisions++;
          print(`  COLLISION: ${label} is both ${other} and ${from}`);
        }
        seen.set(key, from);
      }
    }
  }
  for (const endpoint of [{ path: config.listen.path, scope: undefined }, ...config.endpoints.map((e) => ({ path: e.path, scope: e.path }))]) {
    const endpointTeams = policy.endpoint(endpoint.scope)?.teams;
    for (const team of endpointTeams ?? teams) {
      const access = policy.enabled ? policy.accessOfTeams([team], endpoint.scope) : policy.access(undefined, endpoint.scope);
      const tools: JsonObject[] = [];
      for (const [upstream, items] of [...listed].sort(([a], [b]) => a.localeCompare(b))) {
        for (const { kind, item } of items) {
          const shown = kind === 'tools' ? shapeItem(access, kind, upstream, item) : undefined;
          if (shown) tools.push(shown);
        }
      }
      const listBytes = Buffer.byteLength(JSON.stringify({ tools }));
      const search = access.endpoint?.discovery === 'search';
      const pinned = new Set(access.endpoint?.pinned);
      const upstreams = [...listed.keys()].filter((name) => access.canSeeUpstream(name)).sort();
      const searchTools = [...tools.filter((tool) => pinned.has(tool.name as string)), ...searchModeTools(upstreams, tools.length)];
      const listedTools = search ? searchTools : tools;
      const searchBytes = Buffer.byteLength(JSON.stringify({ tools: searchTools }));
      print(`endpoint ${endpoint.path}, team ${team}: discovery ${search ? 'search' : 'list'}`);
      print(`  lists ${listedTools.length} tool(s): ${listedTools.map((tool) => tool.name).join(', ') || '(none)'}`);
      if (search) print(`  search covers ${tools.length} tool(s): ${tools.map((tool) => tool.name).join(', ') || '(none)'}`);
      print(`  tools/list bytes: list mode ${listBytes}, search mode ${searchBytes} (${listBytes === 0 ? '-' : (searchBytes / listBytes).toFixed(2)}×)`);
    }
  }
  print(`${collisions} collision(s), ${failed} upstream(s) that could not be listed`);
  return collisions > 0 || failed > 0 ? 1 : 0;
}
