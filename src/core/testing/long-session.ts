/**
 * Long, generated coding sessions for governor and planner tests: one task, then `rounds` file
 * reads, each of a different file with code of `lines` lines, the agent commenting on each.
 */
import type { Message } from '../transcript.js';
import { assistantMessage, systemMessage, toolRound, userMessage } from './transcript-builders.js';

export function moduleSource(index: number, lines: number): string {
  return Array.from(
    { length: lines },
    (_, line) =>
      `def handler_${index}_${line}(request): return render_${index}(request, code=${1000 + line})`,
  ).join('\n');
}

export interface LongSessionOptions {
  rounds: number;
  /** Lines of each file read (default 20). */
  lines?: number;
  /** Open a new user request every this many rounds (default: one request only). */
  requestEvery?: number;
}

export function longSession(options: LongSessionOptions): Message[] {
  const lines = options.lines ?? 20;
  const messages: Message[] = [
    systemMessage('You are a coding agent.'),
    userMessage('Review every handler module under src/handlers and report problems.'),
  ];
  for (let index = 1; index <= options.rounds; index += 1) {
    if (options.requestEvery && index > 1 && (index - 1) % options.requestEvery === 0) {
      messages.push(userMessage(`Continue with the next batch, starting at module ${index}.`));
    }
    messages.push(
      ...toolRound(
        `call_${index}`,
        'read_file',
        { path: `src/handlers/module_${index}.py` },
        moduleSource(index, lines),
      ),
    );
  }
  messages.push(assistantMessage('Reviewed all modules.'));
  return messages;
}
