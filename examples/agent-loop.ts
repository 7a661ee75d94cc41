/**
 * `npm run example`: a scripted agent tours this repository's source tree for 120 turns under a
 * 6,000-token window, through the Self-GC governor. One line per commit as it goes, then a
 * summary. The model is a script on loopback; the tools, the files, the tokenizer and the
 * SQLite sidecar are real.
 */
import { fileURLToPath } from 'node:url';
import type { CommitRecord } from '../src/core/store.js';
import { type AgentLoopEvent, type AgentLoopSummary, runAgentLoop } from './agent-loop/run-agent-loop.js';

const number = (value: number) => value.toLocaleString('en-US');

/** `fold 3 (function:read_file:4, function:ls:2, …)`, per operation. */
function describeOperations(commit: CommitRecord): string {
  const byKind = new Map<string, string[]>();
  for (const operation of commit.operations)
    byKind.set(operation.operation, [...(byKind.get(operation.operation) ?? []), operation.objectId]);
  return [...byKind]
    .map(
      ([kind, ids]) => `${kind} ${ids.length} (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''})`,
    )
    .join('; ');
}

export function formatEvent(event: AgentLoopEvent): string {
  const turn = `turn ${String(event.turn).padStart(3)}`;
  if (event.type === 'expand') {
    const { objectId, path, content, exact } = event.recovered;
    return `${turn}  expand ${objectId} → ${path}, ${number(Buffer.byteLength(content))} bytes${exact ? ', byte-exact' : ', NOT exact'}`;
  }
  const { commit } = event;
  const tokens = `${number(commit.tokensBefore).padStart(6)} → ${number(commit.tokensAfter).padStart(6)} tokens`;
  return `${turn}  commit ${commit.commitId.padEnd(12)} ${commit.trigger.padEnd(9)} ${tokens}  ${describeOperations(commit)}`;
}

export function formatSummary(summary: AgentLoopSummary): string[] {
  const counts = new Map<string, number>();
  for (const operation of summary.commits.flatMap((commit) => commit.operations))
    counts.set(operation.operation, (counts.get(operation.operation) ?? 0) + 1);
  const recovered = summary.recovered;
  return [
    'summary',
    `  turns       ${summary.turns} (${summary.tasks} user requests)`,
    `  view        max ${number(summary.maxViewTokens)} tokens of a ${number(summary.window)}-token window (full transcript ${number(summary.transcriptTokens)} tokens)`,
    `  commits     ${summary.commits.length}: ${[...counts].map(([kind, count]) => `${kind} ${count}`).join(', ')}`,
    recovered
      ? `  recovered   ${recovered.objectId} = ${recovered.path} (${number(Buffer.byteLength(recovered.content))} bytes), ${recovered.exact ? 'byte-exact' : 'NOT exact'}${recovered.inNextRequest ? ', sent whole in the next request' : ''}`
      : '  recovered   nothing (no folded file was expanded)',
    ...summary.warnings.map((warning) => `  warning     ${warning}`),
  ];
}

async function main(): Promise<number> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const options = { root, turns: 120, window: 6000, expandAt: 60 };
  console.log(
    `Self-GC agent loop: ${options.turns} turns over ${root}src under a ${number(options.window)}-token window`,
  );
  const summary = await runAgentLoop({ ...options, onEvent: (event) => console.log(formatEvent(event)) });
  for (const line of formatSummary(summary)) console.log(line);
  const held = summary.maxViewTokens <= summary.window && summary.recovered?.exact === true;
  return held ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
