// `npm run test:unit`: the pure lane alone, in seconds. A pure test opens no socket, starts no
// process and needs no Redis or Chromium; test/lanes-unit.test.ts holds every file of this lane to it.
import { configDefaults, defineConfig } from 'vitest/config';

/** The folders of test/ whose tests are not pure; every other test file is in the pure lane. */
export const NOT_PURE_FOLDERS: readonly string[] = [
  'e2e', // whole gateways, real servers and clients, Redis, Chromium, sockets and children
  'bench', // the benchmark's smoke run (`npm run test:bench`)
  'deploy', // the built image and its healthcheck, run as a process
  'helpers-selftest', // the test helpers' own servers, checked against real clients
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...NOT_PURE_FOLDERS.map((folder) => `test/${folder}/**`)],
    pool: 'threads',
    // The files of a worker share one module graph (src/ keeps no module-level state, and a test
    // that fakes timers or stubs restores them in afterEach): a third of the time of isolated files.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    teardownTimeout: 10_000,
  },
});
