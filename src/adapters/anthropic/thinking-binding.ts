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
 * `anthropic.claude-opus-5-5-v1:0`, a gateway's `anthropic/claude-opus-5.5`, a whole later
 * version `claude-opus-6`; not version 5 itself, nor a dated snapshot of it, `claude-opus-5-20260901`).
 * A minor version is one or two digits: a date after the major version is no minor version.
 */
export function bindsThinking(model: string): boolean {
  const version = /claude-[a-z]+-(\d+)(?:[-.](\d{1,2})(?!\d))?/i.exec(model);
  if (version === null) return false;
  const major = Number(version[1]);
  const minor = version[2] === undefined ? 0 : Number(version[2]);
  return major > 5 || (major === 5 && minor >= 1);
}
