/**
 * Records the bundled sample: sessions of a scripted agent exploring this repository's own
 * source tree. The tool outputs are real (the commands run here, on these files); the agent's
 * words are scripted and cite what the outputs showed, as a real agent would.
 *
 *   node --import tsx scripts/record-sample.ts [out.jsonl]
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

function run(command: string): string {
  try {
    return execFileSync('bash', ['-c', command], { encoding: 'utf8', maxBuffer: 8 * 1024 * 1024 });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; status?: number };
    return `${failed.stdout ?? ''}${failed.stderr ?? ''}\n[exit code ${failed.status ?? 1}]`;
  }
}

function recorder(id: string, task: string) {
  const messages: ChatMessage[] = [
    {
      role: 'system',
      content:
        'You are a coding agent working in a TypeScript repository. Use the tools to read files and run commands. Be precise about paths and names.',
    },
    { role: 'user', content: task },
  ];
  let calls = 0;
  const step = (thought: string, tool: 'bash' | 'read_file', argument: string) => {
    calls += 1;
    const callId = `call_${id}_${calls}`;
    const args = tool === 'bash' ? { command: argument } : { path: argument };
    messages.push({
      role: 'assistant',
      content: thought,
      tool_calls: [
        { id: callId, type: 'function', function: { name: tool, arguments: JSON.stringify(args) } },
      ],
    });
    const output = tool === 'bash' ? run(argument) : readFileSync(argument, 'utf8');
    messages.push({ role: 'tool', tool_call_id: callId, content: output });
    return output;
  };
  return {
    messages,
    step,
    say: (text: string) => messages.push({ role: 'assistant', content: text }),
    user: (text: string) => messages.push({ role: 'user', content: text }),
  };
}

function exportsOf(path: string): string[] {
  return [...readFileSync(path, 'utf8').matchAll(/export (?:async )?function (\w+)/g)].map(
    (match) => match[1]!,
  );
}

function firstExport(path: string): string {
  return exportsOf(path)[0] ?? 'main';
}

/** What the agent learnt about a file from its tool outputs, quoted again in later steps. */
interface Facts {
  file: string;
  name: string;
  definedAt: string;
  otherExport: string | undefined;
  folderLines: string | undefined;
}

function explore(id: string, files: string[], question: string) {
  const session = recorder(id, question);
  session.step('Let me see how the source tree is laid out.', 'bash', 'ls -R src | head -120');
  const facts: Facts[] = [];
  for (const file of files) {
    const name = firstExport(file);
    const grep = session.step(
      `I will look for where \`${name}\` is defined and used.`,
      'bash',
      `grep -rn "${name}" src --include=*.ts | grep -v test | head -20`,
    );
    const definedAt = grep.split('\n')[0]?.split(':').slice(0, 2).join(':') || file;
    session.step(`\`${name}\` is defined at ${definedAt}. Reading ${file}.`, 'read_file', file);
    const counts = session.step(
      `Counting lines of ${file} and its neighbours.`,
      'bash',
      `wc -l ${file.replace(/[^/]+$/, '')}*.ts | tail -5`,
    );
    const folderLines = /^\s*(\d+) total$/m.exec(counts)?.[1];
    facts.push({ file, name, definedAt, otherExport: exportsOf(file)[1], folderLines });
  }
  const target = files[0]!;
  session.step(`Checking that ${target} type-checks on its own.`, 'bash', `node -e "require('./${target}')"`);
  session.step(
    `That failed because ${target} is TypeScript; I will check its imports instead.`,
    'bash',
    `grep -n "^import" ${target}`,
  );
  session.step(`Reading ${target} again to confirm the exported names.`, 'read_file', target);
  // The summary quotes what older outputs showed: where each name is defined, what else the
  // file exports, how many lines its folder holds.
  session.say(
    `Done: ${facts
      .map(
        (fact) =>
          `\`${fact.name}\` is defined at ${fact.definedAt}${fact.otherExport ? ` next to \`${fact.otherExport}\`` : ''}${fact.folderLines ? ` (its folder: ${fact.folderLines} lines)` : ''}`,
      )
      .join('; ')}.`,
  );
  session.user('Thanks. Now summarise which of these files is the longest and why.');
  const sizes = session.step('Measuring the files.', 'bash', `wc -l ${files.join(' ')}`);
  const longest = [...sizes.matchAll(/^\s*(\d+) (\S+\.ts)$/gm)].sort(
    (a, b) => Number(b[1]) - Number(a[1]),
  )[0];
  const fact = facts.find((entry) => entry.file === longest?.[2]);
  session.say(
    longest
      ? `${longest[2]} is the longest with ${longest[1]} lines: besides \`${fact?.name ?? 'its main export'}\` (${fact?.definedAt ?? longest[2]}) it holds ${fact?.otherExport ? `\`${fact.otherExport}\` and ` : ''}the helpers they share.`
      : `${files[0]} and its siblings are covered above.`,
  );
  return {
    id: `selfgc-sample:${id}`,
    source: 'recorded by scripts/record-sample.ts over this repository',
    meta: { system: 'scripted agent', task: question },
    messages: session.messages,
  };
}

const sessions = [
  explore(
    'ledger',
    ['src/core/ledger.ts', 'src/core/anchors.ts', 'src/core/project-view.ts'],
    'Explain how the ledger assigns object ids and how references between objects are found.',
  ),
  explore(
    'commit',
    ['src/core/commit-plan.ts', 'src/core/rehearse-plan.ts', 'src/core/session-state.ts'],
    'How does a plan get committed, and what happens when the store fails midway?',
  ),
  explore(
    'planner',
    [
      'src/core/planners/embedded-planner.ts',
      'src/core/render-replacement.ts',
      'src/core/governor/triggers.ts',
    ],
    'Describe what the embedded planner prunes, folds and masks, and when governance runs.',
  ),
  explore(
    'stores',
    ['src/stores/sqlite-store.ts', 'src/stores/memory-store.ts', 'src/stores/parse-store-url.ts'],
    'Which stores exist, and how does the SQLite store search payloads?',
  ),
  explore(
    'eval',
    ['src/eval/judges/anchor-judge.ts', 'src/eval/replay-cut.ts', 'src/eval/aggregate.ts'],
    'How is no-impact judged in the evaluation, and how are the rates aggregated?',
  ),
  explore(
    'cli',
    ['src/cli/run-main.ts', 'src/cli/eval-command.ts', 'src/cli/inspect-command.ts'],
    'What commands does the CLI offer and how are errors turned into exit codes?',
  ),
];
const out = process.argv[2] ?? 'samples/selfgc-sessions.jsonl';
writeFileSync(out, `${sessions.map((session) => JSON.stringify(session)).join('\n')}\n`);
process.stderr.write(
  `wrote ${sessions.length} sessions (${sessions.reduce((sum, session) => sum + session.messages.length, 0)} messages) to ${out}\n`,
);
