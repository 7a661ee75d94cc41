import type { SearchHit, SidecarRecord } from '../core/store.js';
import { parseSearchQuery, WORD_PATTERN } from './search-query.js';

const BEFORE_MATCH = 60;
const AFTER_MATCH = 140;

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** A window of `text` around `index`, never splitting a surrogate pair, whitespace collapsed. */
export function excerptAround(text: string, index: number): string {
  let start = Math.max(0, index - BEFORE_MATCH);
  let end = Math.min(text.length, index + AFTER_MATCH);
  if (start > 0 && isLowSurrogate(text.charCodeAt(start))) start += 1;
  if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  const body = text.slice(start, end).replace(/\s+/g, ' ').trim();
  return `${start > 0 ? '…' : ''}${body}${end < text.length ? '…' : ''}`;
}

/**
 * Search records without an index: tokenise each record's `searchText` the way queries are
 * tokenised and score it by the number of distinct query terms it contains, with the total
 * frequency of those terms breaking ties (it adds less than 1, so more terms always win).
 * Fine for one session's sidecar, which is small; equal scores keep first-write order.
 */
export function searchInProcess(
  records: readonly SidecarRecord[],
  query: string,
  options?: { limit?: number },
): SearchHit[] {
  const { terms, limit } = parseSearchQuery(query, options);
  if (terms.length === 0 || limit === 0) return [];
  const wanted = new Set(terms);
  const hits: SearchHit[] = [];
  for (const record of records) {
    const matched = new Set<string>();
    let frequency = 0;
    let firstIndex = -1;
    for (const match of record.searchText.matchAll(WORD_PATTERN)) {
      const word = match[0].toLowerCase();
      if (!wanted.has(word)) continue;
      matched.add(word);
      frequency += 1;
      if (firstIndex < 0) firstIndex = match.index;
    }
    if (matched.size === 0) continue;
    hits.push({
      objectId: record.objectId,
      snippet: excerptAround(record.searchText, firstIndex),
      score: matched.size + frequency / (frequency + 1),
    });
  }
  return hits.sort((left, right) => right.score - left.score).slice(0, limit);
}
