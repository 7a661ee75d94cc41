/**
 * The handler of the agent's GC tools: a tool call in, the tool-result text out. Arguments are
 * the model's own JSON text and are validated; anything wrong — bad arguments, a refused
 * operation, a failing store — comes back as an `error: …` result the agent can read, never as
 * a throw that would break its loop. fold and prune become a plan from planner `agent`, which the
 * harness rehearses and commits like any other (pins and the latest turn stay out of reach).
 */

import { compactTokens } from '../compact-text.js';
import type { AgentPlanResult } from '../governor/governor-types.js';
import type { Plan } from '../operations.js';
import { GC_TOOL_ARGUMENTS, type GcToolName, isGcToolName } from './gc-tool-definitions.js';

/** A tool call as the model made it. */
export interface GcToolCall {
  name: string;
  /** The arguments as JSON text, exactly as the model produced them. */
  arguments: string;
}

/** What the handler needs from the harness, injected (a governor provides all three). */
export interface GcToolDependencies {
  /** Rehearse and commit a plan from the agent (`governor.applyAgentPlan` with the current transcript). */
  commitAgentPlan(sessionId: string, plan: Plan): Promise<AgentPlanResult>;
  /** The exact payload of an object from the sidecar, or undefined. */
  expand(sessionId: string, objectId: string): Promise<string | undefined>;
  /** Full-text search over the session's sidecar. */
  searchContext(
    sessionId: string,
    query: string,
    limit?: number,
  ): Promise<Array<{ objectId: string; snippet: string }>>;
}

export interface GcToolHandler {
  /** Whether a tool call is one of the GC tools (so an agent loop can route it here). */
  handles(name: string): boolean;
  /** The tool-result text for one call. Never rejects. */
  handle(sessionId: string, call: GcToolCall): Promise<string>;
}

type Parsed = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

function parseArguments(name: GcToolName, argumentsText: string): Parsed {
  let raw: unknown;
  try {
    raw = argumentsText.trim() === '' ? {} : JSON.parse(argumentsText);
  } catch (error) {
    return {
      ok: false,
      error: `arguments of ${name} are not valid JSON (${error instanceof Error ? error.message : String(error)})`,
    };
  }
  const result = GC_TOOL_ARGUMENTS[name].safeParse(raw);
  if (result.success) return { ok: true, value: result.data };
  const issues = result.error.issues.map(
    (issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`,
  );
  return { ok: false, error: `bad arguments for ${name}: ${issues.join('; ')}` };
}

function describeOutcome(operation: 'fold' | 'prune', id: string, result: AgentPlanResult): string {
  const refused = result.rejected.find((entry) => entry.objectId === id);
  if (refused) return `error: ${operation} of ${id} refused (${refused.reason}): ${refused.detail}`;
  const accepted = result.accepted.find((entry) => entry.objectId === id);
  if (!accepted || !result.commit) {
    const why = result.warnings.map((warning) => warning.message).join('; ') || 'nothing was committed';
    return `error: ${operation} of ${id} was not committed: ${why}`;
  }
  const sizes = `${compactTokens(accepted.tokensBefore)} → ${compactTokens(accepted.tokensAfter)} tokens`;
  const recovery =
    operation === 'fold'
      ? `expand("${accepted.key}") recovers it`
      : 'its content is no longer in your context';
  return `${operation === 'fold' ? 'folded' : 'pruned'} ${id} (${sizes}, commit ${result.commit.commitId}); ${recovery}.`;
}

export function createGcToolHandler(dependencies: GcToolDependencies): GcToolHandler {
  async function run(sessionId: string, name: GcToolName, value: Record<string, unknown>): Promise<string> {
    switch (name) {
      case 'fold':
      case 'prune': {
        const id = String(value.id);
        const summary =
          typeof value.summary === 'string' && value.summary.trim() !== '' ? value.summary : undefined;
        const reason =
          typeof value.reason === 'string' && value.reason.trim() !== ''
            ? value.reason
            : 'asked by the agent';
        const plan: Plan = {
          planner: 'agent',
          operations: [
            { objectId: id, operation: name, reason, ...(name === 'fold' && summary ? { summary } : {}) },
          ],
        };
        return describeOutcome(name, id, await dependencies.commitAgentPlan(sessionId, plan));
      }
      case 'expand': {
        const id = String(value.id);
        const payload = await dependencies.expand(sessionId, id);
        return (
          payload ??
          `error: nothing stored for ${id}: it is still in your context whole, or no such object exists.`
        );
      }
      case 'search_context': {
        const query = String(value.query);
        const limit = typeof value.limit === 'number' ? value.limit : 5;
        const hits = await dependencies.searchContext(sessionId, query, limit);
        if (hits.length === 0) return `no removed content matches ${JSON.stringify(query)}.`;
        return [
          `${hits.length} match${hits.length === 1 ? '' : 'es'} for ${JSON.stringify(query)} (expand(id) recovers one):`,
          ...hits.map((hit) => `${hit.objectId}: ${hit.snippet.replace(/\s+/g, ' ').trim()}`),
        ].join('\n');
      }
    }
  }

  return {
    handles: isGcToolName,
    async handle(sessionId, call) {
      if (!isGcToolName(call.name))
        return `error: ${call.name} is not a GC tool (fold, prune, expand, search_context).`;
      const parsed = parseArguments(call.name, call.arguments);
      if (!parsed.ok) return `error: ${parsed.error}`;
      try {
        return await run(sessionId, call.name, parsed.value);
      } catch (error) {
        return `error: ${call.name} failed: ${error instanceof Error ? error.message : String(error)}`;
      }
    },
  };
}
