import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The benchmark's smoke run is `npm run test:bench` (vitest.bench.config.ts), not `npm test`.
    exclude: [...configDefaults.exclude, 'test/bench/**'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    teardownTimeout: 10_000,
    // A test that hangs fails; it never holds the suite.
    bail: 0,
  },
});
