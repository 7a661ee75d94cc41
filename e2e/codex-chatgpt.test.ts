/**
 * codex signed in with ChatGPT (the built-in OpenAI provider, a Responses WebSocket first, zstd
 * bodies) against `selfgc proxy` and a scripted upstream, in a network namespace of its own.
 */
import { describeAgentScenarios } from './describe-agent-scenarios.js';

describeAgentScenarios('codex-chatgpt');
