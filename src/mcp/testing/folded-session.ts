/**
 * A session with folds committed through the library, for the MCP server's tests: one tool
 * output of awkward text (non-ASCII, an emoji across the default page boundary, CRLF, quotes,
 * backslashes, tabs) long enough to page, and one short file read with a word to search for.
 */
import { createGovernor } from '../../core/governor/create-governor.js';
import type { Governor } from '../../core/governor/governor-types.js';
import type { SidecarStore } from '../../core/store.js';
import {
  assistantMessage,
  systemMessage,
  toolRound,
  userMessage,
} from '../../core/testing/transcript-builders.js';
import type { Message } from '../../core/transcript.js';
import { DEFAULT_PAGE_CHARS } from '../recovery-tools.js';

/** The store session, as the proxy names one: `<keyHash>:<sessionId>`. */
export const SESSION = `${'ab'.repeat(16)}:task-42`;
/** The long output's id (the first tool result) and the short one's (the second). */
export const LONG_ID = 'function:bash:1';
export const SHORT_ID = 'function:read_file:2';

/** About 2.6 pages; an emoji sits across the first page boundary. */
export function longOutput(): string {
  const line = 'naïve café — “quoted” \\ back\\slash\t"json" ✓\r\n';
  let head = '';
  for (let index = 0; head.length < DEFAULT_PAGE_CHARS - 80; index += 1) head += `step ${index}: ok\n`;
  head = head.padEnd(DEFAULT_PAGE_CHARS - 1, '.');
  return `${head}😀${line.repeat(Math.ceil((DEFAULT_PAGE_CHARS * 1.6) / line.length))}end of output`;
}

export const SHORT_OUTPUT = 'def zanzibar_handler(request):\n    return render(request)\n';

export function foldedSession(): Message[] {
  return [
    systemMessage('You are a coding agent.'),
    userMessage('Find why the build is slow.'),
    ...toolRound('call_1', 'bash', { command: 'cat build.log' }, longOutput()),
    ...toolRound('call_2', 'read_file', { path: 'src/zanzibar.py' }, SHORT_OUTPUT),
    assistantMessage('The log shows the slow step.'),
    userMessage('Now fix it.'),
  ];
}

/** Fold both outputs of `foldedSession()` into `store` under `SESSION`, as an agent's plan would. */
export async function commitFolds(store: SidecarStore): Promise<Governor> {
  const governor = createGovernor({
    provider: 'openai',
    window: 100_000,
    store,
    triggers: { milestones: false },
  });
  const result = await governor.applyAgentPlan(SESSION, foldedSession(), {
    planner: 'agent',
    operations: [LONG_ID, SHORT_ID].map((objectId) => ({
      objectId,
      operation: 'fold' as const,
      reason: 'test',
    })),
  });
  if (result.accepted.length !== 2) throw new Error(`folds refused: ${JSON.stringify(result.rejected)}`);
  return governor;
}
