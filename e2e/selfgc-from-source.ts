/**
 * `selfgc` from the TypeScript sources (the same entry as `bin/selfgc.js`, without a build):
 * `node --import tsx e2e/selfgc-from-source.ts proxy …`.
 */
import { runMain } from '../src/cli/run-main.js';

await runMain();
