/**
 * Sessions and view checks shared by the eval tests: a coding session whose later steps quote
 * what earlier tool outputs showed (so continuations need anchors from the prefix), a session
 * whose latest step makes many parallel calls, and the protocol checks every view must pass.
 */
import { countMessageTokens, type Ledger } from '../../core/ledger.js';
import type { ViewItem } from '../../core/project-view.js';
import { latestTurnStart } from '../../core/rehearse-plan.js';
import { moduleSource } from '../../core/testing/long-session.js';
import { sampleSession } from '../../core/testing/sample-session.js';
import {
  assistantCalls,
  assistantMessage,
  longOutput,
  systemMessage,
  toolCall,
  toolMessage,
  toolResult,
  toolRound,
  userMessage,
} from '../../core/testing/transcript-builders.js';
import type { Message } from '../../core/transcript.js';

/**
 * A review session of `rounds` file reads (12-line modules), a failing test run every fourth
 * round, a new request every sixth, and assistant steps that quote identifiers two modules back.
 */
export function quotingSession(rounds: number): Message[] {
  const messages: Message[] = [
    systemMessage('You are a coding agent working in /repo.'),
    userMessage('Review the handlers under src/handlers and fix what tests/test_handlers.py reports.'),
  ];
  for (let index = 1; index <= rounds; index += 1) {
    if (index > 1 && (index - 1) % 6 === 0)
      messages.push(userMessage(`Go on with the next batch from module ${index}.`));
    const quoted = index > 2 ? `handler_${index - 2}_4 in src/handlers/module_${index - 2}.py` : undefined;
    messages.push(
      ...toolRound(
        `read_${index}`,
        'read_file',
        { path: `src/handlers/module_${index}.py` },
        moduleSource(index, 12),
        quoted ? { text: `${quoted} calls render_${index - 2}; reading the next module.` } : {},
      ),
    );
    if (index % 4 === 0) {
      messages.push(
        ...toolRound(
          `test_${index}`,
          'bash',
          { command: `pytest tests/test_handlers.py -k module_${index}` },
          [
            `FAILED tests/test_handlers.py::test_module_${index} - KeyError: 'code_${1000 + index}'`,
            longOutput(`trace_${index}`, 30),
          ].join('\n'),
          { isError: true },
        ),
      );
    }
  }
  messages.push(assistantMessage(`handler_${rounds}_2 in src/handlers/module_${rounds}.py is the last one.`));
  return messages;
}

/** The sample session's first request, then one step that reads `count` files in parallel. */
export function parallelLatestStep(count: number): Message[] {
  const calls = Array.from({ length: count }, (_, index) =>
    toolCall(`par_${index}`, 'read_file', { path: `src/part_${index}.py` }),
  );
  return [
    ...sampleSession().slice(0, 11),
    userMessage('Read every part of the package.'),
    assistantCalls(calls, 'Reading all parts at once.'),
    ...calls.map((call, index) =>
      toolMessage(toolResult(call.id, 'read_file', longOutput(`part_${index}`, 10))),
    ),
  ];
}

/** Call ids of tool results in the view whose call is not in an earlier assistant item. */
export function orphanedToolResults(items: readonly ViewItem[]): string[] {
  const calls = new Set<string>();
  const orphans: string[] = [];
  for (const { message } of items) {
    for (const part of message.parts) {
      if (part.type === 'tool-call' && message.role === 'assistant') calls.add(part.id);
      if (part.type === 'tool-result' && !calls.has(part.callId)) orphans.push(part.callId);
    }
  }
  return orphans;
}

/** Tokens of a view counted from scratch. */
export function recountViewTokens(ledger: Ledger, items: readonly ViewItem[]): number {
  return items.reduce(
    (sum, item) =>
      sum +
      (item.changed
        ? countMessageTokens(ledger.options.tokenCounter, item.message)
        : (ledger.messageTokens[item.source] ?? 0)),
    0,
  );
}

/**
 * Protocol and pin problems of a view over the ledger's prefix: orphaned results, a missing or
 * edited system prompt or first request, an edited latest turn. Empty when the view is sound.
 */
export function viewProblems(ledger: Ledger, items: readonly ViewItem[]): string[] {
  const problems = orphanedToolResults(items).map((callId) => `orphaned tool result ${callId}`);
  const unchanged = new Set(items.filter((item) => !item.changed).map((item) => item.source));
  const system = ledger.messages.findIndex((message) => message.role === 'system');
  if (system >= 0 && !unchanged.has(system)) problems.push('system prompt missing or edited');
  const firstUser = ledger.messages.findIndex((message) => message.role === 'user');
  if (firstUser >= 0 && !unchanged.has(firstUser)) problems.push('first request missing or edited');
  for (let index = latestTurnStart(ledger); index < ledger.messages.length; index += 1) {
    if (!unchanged.has(index)) problems.push(`latest-turn message ${index} missing or edited`);
  }
  return problems;
}

/**
 * An agent that reads a module a step and, from the twelfth on, quotes a name of the module it
 * read ten steps back (older than the latest steps, so only an index could show it).
 */
export function recallingSession(rounds: number): Message[] {
  const messages: Message[] = [userMessage('Review the handlers under src/handlers.')];
  for (let index = 1; index <= rounds; index += 1) {
    const text =
      index > 11 ? `handler_${index - 10}_2 in module_${index - 10} needs the same fix.` : 'Reading on.';
    messages.push(
      ...toolRound(
        `read_${index}`,
        'read_file',
        { path: `src/handlers/module_${index}.py` },
        moduleSource(index, 8),
        {
          text,
        },
      ),
    );
  }
  return messages;
}
