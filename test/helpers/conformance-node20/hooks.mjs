// A module resolve hook for @modelcontextprotocol/conformance on Node 20: its dist imports
// `globSync` from 'fs', added in Node 22, so on Node 20 the import fails before anything runs.
// Only the suite's own imports of fs are redirected, to fs-shim.mjs; everyone else gets node:fs.
const SHIM = new URL('./fs-shim.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/conformance/dist/')) return { url: SHIM, shortCircuit: true };
  return nextResolve(specifier, context);
}
