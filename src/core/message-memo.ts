/**
 * What the core works out once per message (its index entries, their ranks), kept by message
 * object. A cached ledger adopts the objects a caller sends at each call for the same content
 * (`Ledger.adoptMessages`): a library caller that parses each request anew sends all new ones,
 * the proxy new ones from the first message that changed (a moved cache breakpoint). The memos
 * of the old objects go over to the new ones, so a call does not work out again what an earlier
 * call knew. The adopting caller vouches that the content is the same (equal content digests).
 */
import type { Message } from './transcript.js';

const memos: WeakMap<Message, unknown>[] = [];

/**
 * A memo by message that follows a message's content into the objects a ledger adopts for it.
 * For module-level memos only: each one is kept for the life of the process.
 */
export function messageMemo<T>(): WeakMap<Message, T> {
  const memo = new WeakMap<Message, T>();
  memos.push(memo as WeakMap<Message, unknown>);
  return memo;
}

/** `to` holds the content of `from` (equal content digests): it takes what `from` had worked out. */
export function carryMessageMemos(from: Message, to: Message): void {
  if (from === to) return;
  for (const memo of memos) {
    const known = memo.get(from);
    if (known !== undefined && !memo.has(to)) memo.set(to, known);
  }
}
