/**
 * What the core works out once per message (its index entries, their ranks), kept by message
 * object. A cached ledger adopts the client's new objects at each call (`Ledger.adoptMessages`:
 * the proxy parses every request anew), with the same content; the memos of the old objects go
 * over to the new ones, so a call does not work out again what an earlier call knew.
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
