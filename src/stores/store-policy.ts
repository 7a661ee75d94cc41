/**
 * The numbers of the one failure policy every store follows (SQLite, Redis, PostgreSQL): how
 * long a call may take, how long a connection attempt may take, and when the circuit breaker
 * (`guardStore`) stops waiting on a store.
 */

/** Deadline of a store call, connecting included: a local or same-zone store answers in a few ms. */
export const DEFAULT_STORE_TIMEOUT_MS = 250;

/** Deadline of maintenance calls (retention sweeps, listings), which go through many sessions. */
export const DEFAULT_MAINTENANCE_TIMEOUT_MS = 10_000;

/**
 * A connection attempt (TLS included) that takes longer is abandoned and retried: a reachable
 * store connects well within it, and calls meanwhile fail at their own deadline.
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 1_000;

/** Failures in a row that open the breaker: one slow call is noise, three are an outage. */
export const DEFAULT_BREAKER_FAILURES = 3;

/** How long an open breaker refuses calls before one probes the store again. */
export const DEFAULT_BREAKER_OPEN_MS = 2_000;
