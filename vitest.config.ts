import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The benchmark's smoke run is `npm run test:bench` (vitest.bench.config.ts), not `npm test`.
    exclude: [...configDefaults.exclude, 'test/bench/**'],
    pool: 'forks',
    // One worker per core (vitest's default leaves one core idle, and on 2 cores runs the files
    // one by one): most files wait on processes and sockets, so two at a time take far less time.
    maxWorkers: '100%',
    // The files of a worker share one module graph: src/ keeps no module-level state, the test
    // helpers none either, and a test that fakes timers restores them in afterEach. Importing
    // src/ once per worker instead of once per file saves about a tenth of the suite's time.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    teardownTimeout: 10_000,
    // A test that hangs fails; it never holds the suite.
    bail: 0,
  },
});
