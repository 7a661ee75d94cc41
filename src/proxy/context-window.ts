/**
 * Each model's context window, the proxy's default when `window` is not configured: the whole
 * request (system, messages, tool definitions and the output reserve) is kept inside it.
 * A model name is matched by its longest known prefix, after any provider prefix
 * (`anthropic/…`, `us.anthropic.…`); unknown models get a conservative 128k.
 */

interface ModelWindow {
  tokens: number;
  /** The window with Anthropic's `context-1m` beta (`anthropic-beta: context-1m-2025-08-07`). */
  longContext?: number;
}

/** The request header that opts an Anthropic request into the long context. */
export const LONG_CONTEXT_HEADER = 'anthropic-beta';

const LONG_CONTEXT_BETA = /(^|,)\s*context-1m-/;

const MILLION = 1_000_000;

/**
 * Sources: Anthropic's models overview and model pages (Opus 4.6 / 4.7 and Sonnet 4.6 have a 1M
 * window; Sonnet 4 and 4.5 200k, 1M with the beta; Opus 4.5, 4.1, 4 and Haiku 4.5 200k; Opus 4.8
 * and every model of version 5, Fable, Mythos, Opus, Sonnet and Haiku, 1M, as Claude Code's model
 * catalog has them too); OpenAI's
 * model pages; Codex's model catalog (`codex-rs`): the GPT-5 family's 400k context is 272k of
 * input plus 128k of output, and Codex sends every GPT-5.x with a 272k window, also 5.4 and 5.5
 * whose API takes about 1M at twice the input price past 272k (set `window` to use it).
 */
const WINDOWS: ReadonlyMap<string, ModelWindow> = new Map([
  ['claude', { tokens: 200_000 }],
  ['claude-3', { tokens: 200_000 }],
  ['claude-haiku-4-5', { tokens: 200_000 }],
  ['claude-opus-4', { tokens: 200_000 }],
  ['claude-opus-4-1', { tokens: 200_000 }],
  ['claude-opus-4-5', { tokens: 200_000 }],
  ['claude-opus-4-6', { tokens: MILLION }],
  ['claude-opus-4-7', { tokens: MILLION }],
  ['claude-opus-4-8', { tokens: MILLION }],
  ['claude-opus-5', { tokens: MILLION }],
  ['claude-sonnet-5', { tokens: MILLION }],
  ['claude-haiku-5', { tokens: MILLION }],
  ['claude-fable-5', { tokens: MILLION }],
  ['claude-mythos-5', { tokens: MILLION }],
  ['claude-sonnet-4', { tokens: 200_000, longContext: MILLION }],
  ['claude-sonnet-4-5', { tokens: 200_000, longContext: MILLION }],
  ['claude-sonnet-4-6', { tokens: MILLION }],
  ['gpt-5', { tokens: 272_000 }],
  ['gpt-5-chat', { tokens: 128_000 }],
  ['gpt-5.1-chat', { tokens: 128_000 }],
  ['gpt-5.3-codex-spark', { tokens: 128_000 }],
  ['gpt-4.1', { tokens: 1_047_576 }],
  ['gpt-4o', { tokens: 128_000 }],
  ['gpt-4-turbo', { tokens: 128_000 }],
  ['gpt-4', { tokens: 8_192 }],
  ['gpt-3.5-turbo', { tokens: 16_385 }],
  ['gpt-oss', { tokens: 131_072 }],
  ['o1', { tokens: 200_000 }],
  ['o1-mini', { tokens: 128_000 }],
  ['o1-preview', { tokens: 128_000 }],
  ['o3', { tokens: 200_000 }],
  ['o4-mini', { tokens: 200_000 }],
  ['codex-mini', { tokens: 200_000 }],
]);

export const DEFAULT_CONTEXT_WINDOW = 128_000;

/**
 * `anthropic/claude-…`, `us.anthropic.claude-…-v1:0` and `claude-…` all name one model, and so do
 * OpenRouter's dotted versions (`anthropic/claude-sonnet-4.6`, as Cline sends them).
 */
function bareModelName(model: string): string {
  const name = model.toLowerCase();
  const bare = name.slice(name.lastIndexOf('/') + 1).replace(/^([a-z0-9-]+\.)*anthropic\./, '');
  return bare.startsWith('claude') ? bare.replace(/(\d)\.(\d)/g, '$1-$2') : bare;
}

/**
 * The context window of `model`; `requestHeaders` tell whether an Anthropic request asked for the
 * long context.
 */
export function contextWindowOf(model: string, requestHeaders?: Headers): number {
  const name = bareModelName(model);
  let best: string | undefined;
  for (const prefix of WINDOWS.keys()) {
    if (name.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  const entry = best === undefined ? undefined : WINDOWS.get(best);
  if (entry === undefined) return DEFAULT_CONTEXT_WINDOW;
  const beta = requestHeaders?.get(LONG_CONTEXT_HEADER) ?? '';
  return entry.longContext !== undefined && LONG_CONTEXT_BETA.test(beta) ? entry.longContext : entry.tokens;
}
