/**
 * The proxy: an OpenAI- and Anthropic-compatible HTTP endpoint that governs the context of any
 * agent pointed at it. `createProxy` is a fetch-style handler; `serveProxy` binds it to node:http;
 * `createGovernorPool` governs every model with its own window over one store.
 */
export type { AbSplit, Arm } from './ab-split.js';
export { contextWindowOf, DEFAULT_CONTEXT_WINDOW } from './context-window.js';
export { createProxy, type SelfGcProxy } from './create-proxy.js';
export {
  createGovernanceWorkers,
  defaultGovernanceThreads,
  type GovernanceWorkers,
  type GovernanceWorkersOptions,
} from './governance-workers.js';
export { createGovernorPool, type GovernorContext, type GovernorFactory } from './governor-pool.js';
export { jsonLineLogger, type ProxyLogEntry } from './proxy-log.js';
export type { ProxyOptions } from './proxy-options.js';
export {
  type RetentionSweeper,
  type RetentionSweeperOptions,
  startRetentionSweeper,
} from './retention-sweeper.js';
export { type ServedProxy, type ServeOptions, serveProxy } from './serve-proxy.js';
export { type KeylessTenancy, SESSION_HEADER } from './session-identity.js';
