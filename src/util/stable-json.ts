// JSON with object keys in sorted order: equal values give equal text, whatever order their keys
// were built in (keys for caches and fingerprints).

export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    return `{${Object.keys(object).sort().map((k) => `${JSON.stringify(k)}:${stableJson(object[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
