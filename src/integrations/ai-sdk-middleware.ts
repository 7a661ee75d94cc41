/**
 * Self-GC as a Vercel AI SDK (v6) language-model middleware: `transformParams` governs the prompt
 * of every `generate` and `stream` call, so `wrapLanguageModel({ model, middleware })` gives any
 * provider's model a context that always fits the window. Types only: `ai` and `@ai-sdk/provider`
 * stay optional at runtime.
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Middleware,
  LanguageModelV3Prompt,
} from '@ai-sdk/provider';
import { fromModelMessages, type ModelMessage, toModelMessages } from '../adapters/index.js';
import { gcToolsForAiSdk } from '../core/gc-tools/gc-tool-definitions.js';
import { withTools } from './agent-tools.js';
import { type GovernOptions, governRequest, type RequestCodec } from './govern-request.js';
import { toLanguageModelPrompt } from './language-model-prompt.js';

/** Options of `createSelfGcMiddleware`; `sessionId` may read the call options (`providerOptions`, `headers`). */
export type SelfGcMiddlewareOptions = GovernOptions<LanguageModelV3CallOptions>;

const promptCodec: RequestCodec<LanguageModelV3CallOptions, LanguageModelV3Prompt> = {
  // The provider-facing prompt is a valid `ModelMessage` list; `fromModelMessages` validates it.
  read: (params) => fromModelMessages(params.prompt as unknown as ModelMessage[]),
  write: (view) => {
    const { messages, warnings } = toModelMessages(view);
    return { value: toLanguageModelPrompt(messages), warnings };
  },
};

/**
 * A middleware that replaces `params.prompt` with the governed view of the session. The prompt
 * the caller passes is the full transcript; the model receives the view (objects folded, masked
 * or pruned, with recovery pointers), and the sidecar keeps every removed byte.
 */
export function createSelfGcMiddleware(options: SelfGcMiddlewareOptions): LanguageModelV3Middleware {
  return {
    specificationVersion: 'v3',
    async transformParams({ params }) {
      const prompt = await governRequest(options, params, promptCodec, params.abortSignal);
      if (prompt === undefined) return params;
      // The prompt codec writes the prompt alone: the GC tools go into the call's tools here.
      return options.agentTools ? withTools({ ...params, prompt }, gcToolsForAiSdk()) : { ...params, prompt };
    },
  };
}
