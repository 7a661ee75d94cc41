/** Word characters of a search: letters and digits of any script. Everything else separates. */
export const WORD_PATTERN = /[\p{L}\p{N}]+/gu;

const MAX_TERMS = 32;
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;

/** A user's search reduced to what a backend may see. */
export interface SearchQuery {
  /** Lowercased, deduplicated words; empty when the query has none (then search returns []). */
  terms: string[];
  /** How many hits to return, 0 to 100. */
  limit: number;
}

/**
 * Reduce a free-text query to its words. Backends build their own query syntax from these
 * terms only, so operators, quotes and brackets typed by a user (or a model) never reach an
 * FTS parser and can never make a search throw.
 */
export function parseSearchQuery(query: string, options?: { limit?: number }): SearchQuery {
  const terms = new Set<string>();
  for (const match of query.toLowerCase().matchAll(WORD_PATTERN)) {
    if (terms.size === MAX_TERMS) break;
    terms.add(match[0]);
  }
  const requested = options?.limit ?? DEFAULT_LIMIT;
  const limit = Number.isFinite(requested) ? Math.min(MAX_LIMIT, Math.max(0, Math.floor(requested))) : 0;
  return { terms: [...terms], limit };
}
