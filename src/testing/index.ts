/** Test doubles for model endpoints: a scripted upstream on loopback and an SSE reader. */

export { createEchoScript, latestUserText } from './echo-script.js';
export { parseSse, readSse, type SseEvent, sseJson } from './read-sse.js';
export {
  estimateInputTokens,
  estimateTokens,
  type Script,
  type ScriptedError,
  type ScriptedRaw,
  type ScriptedReply,
  type ScriptedRequest,
  type ScriptedToolCall,
  type ScriptedUsage,
} from './scripted-reply.js';
export {
  type ScriptedUpstream,
  type ScriptedUpstreamOptions,
  startScriptedUpstream,
} from './scripted-upstream.js';
