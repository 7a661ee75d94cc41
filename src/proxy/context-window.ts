/**
 * Each model's real context window, the proxy's default when `window` is not configured.
 * Prefixes are matched longest first; unknown models get a conservative 128k.
 */
const WINDOWS: ReadonlyArray<readonly [prefix: string, tokens: number]> = [
  ['claude-opus-4', 200_000],
  ['claude-sonnet-4', 200_000],
  ['claude-3', 200_000],
  ['claude', 200_000],
  ['gpt-5', 400_000],
  ['gpt-4.1', 1_047_576],
  ['gpt-4o', 128_000],
  ['gpt-4-turbo', 128_000],
  ['gpt-4', 8_192],
  ['gpt-3.5-turbo', 16_385],
  ['o4-mini', 200_000],
  ['o3', 200_000],
  ['o1', 200_000],
  ['codex-mini', 200_000],
];

export const DEFAULT_CONTEXT_WINDOW = 128_000;

export function contextWindowOf(model: string): number {
  let best: readonly [string, number] | undefined;
  for (const entry of WINDOWS) {
    if (model.startsWith(entry[0]) && (best === undefined || entry[0].length > best[0].length)) best = entry;
  }
  return best?.[1] ?? DEFAULT_CONTEXT_WINDOW;
}
