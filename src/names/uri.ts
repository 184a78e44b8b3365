// The canonical form of a resource URI an upstream is named by, pure: team rules decide on it and
// the upstream is sent it, so another spelling of one resource (`./` or `../` segments, an
// uppercase scheme, a tab or newline inside, `%2e` for a dot) is not a way round a rule. It is the
// WHATWG URL serialisation (`new URL(uri).href`), which is how the SDKs' servers (the TypeScript
// McpServer, Python's pydantic URLs) resolve a URI they are sent. A URI that does not parse as
// a URL stays as it is, unless it carries what a parser would drop (C0 controls, spaces at
// either end): that is refused, as no spelling of anything.

/** Characters a URL parser drops or strips: in a URI that does not parse, refused. */
const STRIPPED = /[\u0000-\u001f]|^ | $/;
/** A URI template's expressions (RFC 6570: `{id}`, `{+path}`, `{?q,lang}`). */
const EXPRESSION = /\{[^{}]*\}/g;
/** What an expression stands in for while a template is parsed: survives every part of a URL unchanged. */
const MARK = 'zzexpr';
const MARKS = /zzexpr(\d+)zz/g;

/** The canonical form of `uri`; undefined when it is refused. */
export function canonicalUri(uri: string): string | undefined {
  let href: string;
  try {
    href = new URL(uri).href;
  } catch {
    return STRIPPED.test(uri) ? undefined : uri;
  }
  // A serialisation that would read back as another one is not one form (never seen; held anyway).
  return href === uri || reparsed(href) === href ? href : undefined;
}

function reparsed(href: string): string | undefined {
  try {
    return new URL(href).href;
  } catch {
    return undefined;
  }
}

/**
 * The canonical form of a URI template (completion/complete's ref/resource): as `canonicalUri`,
 * with its expressions kept as written (a URL would percent-encode their braces, and a server
 * finds its template by the string it listed). Undefined when refused, or when canonicalising
 * would drop or reorder an expression (`{a}/..`).
 */
export function canonicalUriTemplate(template: string): string | undefined {
  const expressions = template.match(EXPRESSION);
  if (!expressions) return canonicalUri(template);
  if (template.toLowerCase().includes(MARK)) return undefined;
  let next = 0;
  const marked = canonicalUri(template.replace(EXPRESSION, () => `${MARK}${next++}zz`));
  if (marked === undefined) return undefined;
  const order = [...marked.matchAll(MARKS)].map((match) => Number(match[1]));
  if (order.length !== expressions.length || order.some((index, at) => index !== at)) return undefined;
  return marked.replace(MARKS, (_, index: string) => expressions[Number(index)]!);
}
