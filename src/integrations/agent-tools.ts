/**
 * The agent-driven mode of the integrations: `createAgentTools({ governor })`, passed to an
 * integration as `agentTools`, makes every governed request also carry the GC tools — `fold`,
 * `prune`, `expand`, `search_context` — in its provider's own format, and end with the context
 * ledger (objects, sizes, states, `budget_used_pct`), after the view so the cached prefix stays.
 * The agent's loop routes the model's GC calls to `handler`: a fold or prune is the agent's own
 * plan, rehearsed, pinned and committed by the governor against the transcript of the session's
 * latest governed request, and takes effect from the next one.
 */
import { createGcToolHandler, type GcToolHandler } from '../core/gc-tools/gc-tool-handler.js';
import type { Governor } from '../core/governor/governor-types.js';
import type { Message } from '../core/transcript.js';

export interface AgentTools {
  /** Answers a GC tool call (`handles(name)` first): never rejects, errors come back as text. */
  readonly handler: GcToolHandler;
  /** Called by the integrations: the transcript of a session's latest governed request. */
  remember(sessionId: string, messages: readonly Message[]): void;
}

export interface AgentToolsOptions {
  governor: Governor;
  /** Sessions whose latest transcript is kept for the agent's plans (default 1000, most recent). */
  sessions?: number;
}

export function createAgentTools(options: AgentToolsOptions): AgentTools {
  const { governor } = options;
  const limit = options.sessions ?? 1000;
  const latest = new Map<string, readonly Message[]>();
  const handler = createGcToolHandler({
    async commitAgentPlan(sessionId, plan) {
      const messages = latest.get(sessionId);
      if (messages === undefined)
        throw new Error(`no request of session ${sessionId} was governed yet: send one first`);
      return governor.applyAgentPlan(sessionId, messages, plan);
    },
    expand: (sessionId, objectId) => governor.expand(sessionId, objectId),
    searchContext: (sessionId, query, limit) => governor.searchContext(sessionId, query, limit),
  });
  return {
    handler,
    remember(sessionId, messages) {
      latest.delete(sessionId);
      latest.set(sessionId, messages);
      if (latest.size > limit) latest.delete(latest.keys().next().value!);
    },
  };
}

/** `body` with `tools` appended to its own (an SDK request's `tools` field). */
export function withTools<Body>(body: Body, tools: readonly unknown[]): Body {
  const own = (body as { tools?: unknown }).tools;
  return { ...body, tools: [...(Array.isArray(own) ? own : []), ...tools] };
}
