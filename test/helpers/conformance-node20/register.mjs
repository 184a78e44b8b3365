// Loaded with `node --import` before the conformance suite's CLI: installs the resolve hook that
// gives the suite's dist an `fs` with `globSync`, which Node 20 lacks (see hooks.mjs).
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
