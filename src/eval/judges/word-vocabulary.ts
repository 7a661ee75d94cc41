/**
 * Which tokens are words of general language, for the rare-token judge: a session is too small
 * a corpus to tell (`probably` sits in two messages of a session made of tool output), so the
 * judge asks a vocabulary learned on far more text. A BPE table is one: a word it encodes as a
 * single piece, after a space as in running text, is common; `evict_entry` or `gitignored`,
 * which it splits, are not.
 */
import { loadEncodingSync } from '../../tokenizers/load-encoding.js';

/** Whether a token (lowercase, as the judge reads it) is a common word of general language. */
export interface WordVocabulary {
  isCommonWord(token: string): boolean;
}

/** Past this many remembered answers the memo starts over, so it stays bounded over long evaluations. */
const MEMO_LIMIT = 200_000;

const PLAIN = { disallowedSpecial: new Set<string>() };

/** o200k_base's vocabulary; its table loads on the first question, once per process. */
export function createBpeVocabulary(): WordVocabulary {
  const memo = new Map<string, boolean>();
  return {
    isCommonWord(token) {
      const known = memo.get(token);
      if (known !== undefined) return known;
      const common = loadEncodingSync('o200k_base')(` ${token}`, PLAIN) === 1;
      if (memo.size >= MEMO_LIMIT) memo.clear();
      memo.set(token, common);
      return common;
    },
  };
}
