/**
 * The agent-driven mode (`selfgc proxy --agent-tools`): beside the recovery tools, the model gets
 * `selfgc_fold` and `selfgc_prune`, and each governed request ends with the context ledger (the
 * objects it may operate on, `budget_used_pct`). The proxy answers the model's GC calls itself,
 * like recovery: the agent's plan goes through the governor's rehearsal, pins and commit
 * (`applyAgentPlan`), and takes effect from the client's next request. The ledger goes last, after
 * the view, so the prefix the provider cached stays as it was.
 */
import { toSelfGcError } from '../core/errors.js';
import { gcToolSpecs } from '../core/gc-tools/gc-tool-definitions.js';
import { createGcToolHandler } from '../core/gc-tools/gc-tool-handler.js';
import type { AgentPlanResult } from '../core/governor/governor-types.js';
import type { Plan } from '../core/operations.js';
import type { ToolDefinition, WireToolCall } from './wire-dialect.js';

/** What the proxy's tool names start with. */
export const PROXY_TOOL_PREFIX = 'selfgc_';
export const FOLD_TOOL = `${PROXY_TOOL_PREFIX}fold`;
export const PRUNE_TOOL = `${PROXY_TOOL_PREFIX}prune`;

/** `selfgc_fold` and `selfgc_prune`, from the same argument schemas as the library's GC tools. */
export const AGENT_TOOLS: readonly ToolDefinition[] = gcToolSpecs
  .filter((spec) => spec.name === 'fold' || spec.name === 'prune')
  .map((spec) => ({
    name: `${PROXY_TOOL_PREFIX}${spec.name}`,
    description: spec.description,
    parameters: spec.parameters,
  }));

/** Whether a tool is one of the agent's GC tools the proxy answers. */
export function isAgentTool(name: string): boolean {
  return name === FOLD_TOOL || name === PRUNE_TOOL;
}

/**
 * Commits the agent's plan for a session: the governor's `applyAgentPlan` with the transcript of
 * the request the call came in (the thread that governed it keeps that transcript).
 */
export type CommitAgentPlan = (sessionId: string, plan: Plan) => Promise<AgentPlanResult>;

/**
 * The tool result of one `selfgc_fold` or `selfgc_prune` call: what was folded or pruned, or why
 * not. A failing store is said by its code only: the model, and through it the client, reads it.
 */
export async function answerAgentCall(
  commitAgentPlan: CommitAgentPlan,
  sessionId: string,
  call: WireToolCall,
): Promise<string> {
  const handler = createGcToolHandler({
    async commitAgentPlan(session, plan) {
      try {
        return await commitAgentPlan(session, plan);
      } catch (error) {
        throw new Error(`governance failed (${toSelfGcError(error).code})`);
      }
    },
    expand: async () => undefined,
    searchContext: async () => [],
  });
  const name = call.name.slice(PROXY_TOOL_PREFIX.length);
  return handler.handle(sessionId, { name, arguments: call.arguments });
}
