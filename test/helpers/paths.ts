// Paths the tests share: the repository root, the fixtures and the real MCP servers from npm.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const FIXTURES = join(ROOT, 'test', 'fixtures');
export const EVERYTHING_BIN = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const MEMORY_BIN = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
export const NODE = process.execPath;
