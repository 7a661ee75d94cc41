/**
 * Which Anthropic models bind a thinking block to its prefix (preserved thinking: nothing before a
 * block sent back may have changed since it was produced), and the beta header under which a
 * request may ask the API to drop the blocks a change invalidated instead of refusing it.
 */

/** The beta header value that lets a request set how the API treats invalidated thinking. */
export const THINKING_BINDING_BETA = 'thinking-binding-controls-2026-08-01';

/**
 * Whether a model checks the prefix of thinking blocks: Claude models from version 5.1 on, by a
 * version floor, since every later model keeps the check (`claude-fable-5-1`, a provider's
 * `anthropic.claude-opus-5-5-v1:0`; not a dated snapshot of a whole version, `claude-opus-5-20260901`).
 */
export function bindsThinking(model: string): boolean {
  const version = /claude-[a-z]+-(\d+)-(\d{1,2})(?!\d)/.exec(model);
  if (version === null) return false;
  const major = Number(version[1]);
  const minor = Number(version[2]);
  return major > 5 || (major === 5 && minor >= 1);
}
