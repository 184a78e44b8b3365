// Tool parameters mirrored into HTTP headers (2026-07-28: basic/transports/streamable-http.mdx
// "Custom Headers from Tool Parameters", server/tools.mdx "x-mcp-header"): a property of a tool's
// inputSchema annotated `x-mcp-header: Name` is sent as `Mcp-Param-Name`, its value encoded as
// Mcp-Name is. The gateway mirrors them as a client (towards a 2026-07-28 upstream, from the
// arguments it actually sends, after renames and pinned arguments) and checks them as a server
// (from a 2026-07-28 client, against the schema that client was shown). Pure.
import { decodeHeaderValue, encodeHeaderValue } from './era.js';
import { isObject, type JsonObject } from './jsonrpc.js';

/** One mirrored parameter: the header's name part and the property path (a chain of `properties` keys). */
export interface ParamHeader {
  readonly name: string;
  readonly path: readonly string[];
}

/** RFC 9110 §5.1 token characters. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PRIMITIVE = new Set(['string', 'integer', 'boolean']);
/** Keywords under which an annotation is not statically reachable. */
const UNREACHABLE = ['items', 'prefixItems', 'additionalProperties', 'patternProperties', 'oneOf', 'anyOf', 'allOf', 'not', 'if', 'then', 'else', '$defs', 'definitions', 'dependentSchemas', 'contains'];

/** Header names in requests are compared lowercased (HTTP field names are case-insensitive). */
export function paramHeaderName(name: string): string {
  return `mcp-param-${name.toLowerCase()}`;
}

/**
 * The parameters a tool's inputSchema mirrors into headers: none (an empty list), or why the
 * annotations break the rules (a tool a Streamable HTTP client must not list).
 */
export function paramHeadersOf(schema: unknown): readonly ParamHeader[] | string {
  const found: ParamHeader[] = [];
  const problem = walk(schema, [], found, true);
  if (problem) return problem;
  const seen = new Set<string>();
  for (const { name } of found) {
    const key = name.toLowerCase();
    if (seen.has(key)) return `x-mcp-header "${name}" is not unique`;
    seen.add(key);
  }
  return found;
}

function walk(schema: unknown, path: string[], found: ParamHeader[], reachable: boolean): string | undefined {
  if (!isObject(schema)) return undefined;
  const annotation = schema['x-mcp-header'];
  if (annotation !== undefined) {
    if (!reachable || path.length === 0) return `x-mcp-header at ${path.join('.') || 'the root'} is not reachable through properties alone`;
    if (typeof annotation !== 'string' || !TOKEN.test(annotation)) return `x-mcp-header at ${path.join('.')} is not a header token`;
    if (typeof schema.type !== 'string' || !PRIMITIVE.has(schema.type)) return `x-mcp-header at ${path.join('.')} is on a property that is not a string, integer or boolean`;
    found.push({ name: annotation, path: [...path] });
  }
  if (isObject(schema.properties)) {
    for (const [key, child] of Object.entries(schema.properties)) {
      const problem = walk(child, [...path, key], found, reachable);
      if (problem) return problem;
    }
  }
  for (const keyword of UNREACHABLE) {
    const value = schema[keyword];
    for (const child of Array.isArray(value) ? value : isObject(value) ? (keyword === '$defs' || keyword === 'definitions' || keyword === 'patternProperties' || keyword === 'dependentSchemas' ? Object.values(value) : [value]) : []) {
      const problem = walk(child, path, found, false);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** The value at a property path of the arguments, when it is one a header can carry. */
function valueAt(args: JsonObject, path: readonly string[]): string | undefined {
  let value: unknown = args;
  for (const key of path) {
    if (!isObject(value)) return undefined;
    value = value[key];
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/** The `Mcp-Param-*` headers for these arguments (names lowercased); a parameter with no value has none. */
export function paramHeaderValues(params: readonly ParamHeader[], args: JsonObject): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { name, path } of params) {
    const value = valueAt(args, path);
    if (value !== undefined) headers[paramHeaderName(name)] = encodeHeaderValue(value);
  }
  return headers;
}

/**
 * Whether a request's `Mcp-Param-*` headers agree with its arguments ("Server Behavior for
 * Custom Headers"): each mirrored parameter with a value has its header, decoded equal; none
 * without one has a header; undefined when they agree, else what is wrong. Headers of no
 * parameter of this tool are not the gateway's to judge.
 */
export function checkParamHeaders(params: readonly ParamHeader[], args: JsonObject, headers: Readonly<Record<string, string>>): string | undefined {
  for (const { name, path } of params) {
    const raw = headers[paramHeaderName(name)];
    const value = valueAt(args, path);
    if (raw === undefined) {
      if (value !== undefined) return `the body carries ${path.join('.')} but the Mcp-Param-${name} header is missing`;
      continue;
    }
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined) return `the Mcp-Param-${name} header value is malformed`;
    if (value === undefined) return `the Mcp-Param-${name} header is sent but the body carries no ${path.join('.')}`;
    if (decoded !== value) return `the Mcp-Param-${name} header does not match the body's ${path.join('.')}`;
  }
  return undefined;
}
