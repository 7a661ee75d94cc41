/**
 * Recovery pointers in what an integration sent, for tests that accept whatever the governor
 * folded: one tool output (`function:read_file:3`) or the work after a request up to a step
 * (`conversation:user:1@16`). The keys are read from what was sent and expanded from the
 * session's sidecar, as the model would.
 */
import type { Governor } from '../../core/governor/governor-types.js';
import { moduleSource } from '../../core/testing/long-session.js';

/** `expand("<key>")` as it reads inside JSON text. */
const POINTER = /expand\(\\"([^"\\]+)\\"\)/g;

/** The keys of every recovery pointer in `sent` (any JSON value), in order of first appearance. */
export function pointerKeys(sent: unknown): string[] {
  return [...new Set([...JSON.stringify(sent).matchAll(POINTER)].map((match) => match[1]!))];
}

/** The tool outputs of `longSession({ rounds, lines })`: the file reads, in order. */
export function fileReads(rounds: number, lines: number): string[] {
  return Array.from({ length: rounds }, (_, index) => moduleSource(index + 1, lines));
}

export interface Recovery {
  /** Keys of the pointers shown. */
  keys: string[];
  /** Keys the sidecar does not know. */
  unknownKeys: string[];
  /** Originals not in what was sent verbatim. */
  heldBack: string[];
  /** Held-back originals that no pointer shown brings back. */
  unrecoverable: string[];
}

/** How what was sent stands to `originals`: what it holds back, and whether its pointers recover it. */
export async function recoveryOf(
  governor: Governor,
  sessionId: string,
  sent: unknown,
  originals: readonly string[],
): Promise<Recovery> {
  const json = JSON.stringify(sent);
  const keys = pointerKeys(sent);
  const expanded = await Promise.all(keys.map((key) => governor.expand(sessionId, key)));
  const heldBack = originals.filter((original) => !json.includes(JSON.stringify(original).slice(1, -1)));
  return {
    keys,
    unknownKeys: keys.filter((_, index) => expanded[index] === undefined),
    heldBack,
    unrecoverable: heldBack.filter((original) => !expanded.some((text) => text?.includes(original) === true)),
  };
}
