// What the config tests share: the ConfigError a config is refused with.
import { expect } from 'vitest';
import { ConfigError } from '../../src/config/load.js';

/** The ConfigError that `build` throws; fails the test when it throws nothing or something else. */
export function configError(build: () => unknown): ConfigError {
  try {
    build();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, but nothing was thrown');
}
