/**
 * Which stored response a client's answer stands for, where the two differ. A streamed answer
 * that recovery merged from several rounds carries the first round's id (`response.created` goes
 * out before the proxy knows of a second round), while the provider keeps each round as a response
 * of its own, and the first ends in the proxy's call, unanswered. A client that continues the
 * answer by `previous_response_id` names the id it was given; the proxy sends on the round that
 * closed the answer, which holds the client's items after the proxy's answered calls.
 *
 * Kept in this process, for the latest `limit` answers, apart per key: behind several proxy
 * instances a continuation that reaches another instance goes as the client sent it.
 */
export interface StoredResponses {
  /** `shown` was given to the client for an answer the provider keeps as `stored`. */
  note(scope: string, shown: string, stored: string): void;
  /** The stored response the client's `shown` stands for, when it is another. */
  storedFor(scope: string, shown: string): string | undefined;
}

export const STORED_RESPONSES_LIMIT = 10_000;

/** The warning of a request sent on from another stored response than the one it named. */
export const CONTINUED_FROM_LAST_ROUND = 'continued-from-last-round';

export function createStoredResponses(limit = STORED_RESPONSES_LIMIT): StoredResponses {
  const stored = new Map<string, string>();
  const keyOf = (scope: string, shown: string) => `${scope}\n${shown}`;
  return {
    note(scope, shown, storedId) {
      if (shown === storedId) return;
      const key = keyOf(scope, shown);
      stored.delete(key);
      stored.set(key, storedId);
      if (stored.size > limit) stored.delete(stored.keys().next().value!);
    },
    storedFor(scope, shown) {
      return stored.get(keyOf(scope, shown));
    },
  };
}
