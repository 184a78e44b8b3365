// Reading the gateway's Prometheus exposition in tests.
import { expect } from 'vitest';

/** `name{labels} value` lines of the exposition, as a map from `name{labels}` to value. */
export async function scrape(url: URL): Promise<Map<string, number>> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const series = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}
