/**
 * A deterministic generator of long agent sessions for the benchmark, in the OpenAI Chat shape
 * of the recorded sessions: a system prompt, a task, then assistant steps that call read_file,
 * bash and grep on one fictional repository, with the outputs such a run produces (numbered
 * source files, test and compiler logs, listings, diffs, grep hits) and a follow-up request now
 * and then. Files keep their content across reads and grep searches that content, so paths and
 * identifiers repeat the way they do in real runs. Same seed and options, same session.
 */
import type { OpenAIChatMessage } from '../src/adapters/openai-chat/openai-chat-api.js';

export interface GenerateSessionOptions {
  seed: number;
  /** Stop adding steps once the transcript holds this many tokens. */
  targetTokens: number;
  /** Counts tokens of each message's text as it is generated. */
  countTokens: (text: string) => number;
  /** Multiplies the size of tool outputs (default 1): larger means fewer, bigger steps. */
  outputScale?: number;
}

type Random = () => number;

/** mulberry32: small, fast, and good enough to vary a transcript. */
function createRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = Math.imul(state ^ (state >>> 15), state | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

const between = (random: Random, low: number, high: number) => low + Math.floor(random() * (high - low + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const hex = (random: Random, length: number) =>
  Array.from({ length }, () => Math.floor(random() * 16).toString(16)).join('');

const MODULES = ['invoices', 'payments', 'customers', 'billing', 'webhooks', 'lib'] as const;
const NOUNS = ['Invoice', 'Payment', 'Customer', 'Discount', 'TaxRate', 'Refund', 'Subscription', 'LineItem'];
const VERBS = ['compute', 'apply', 'validate', 'resolve', 'fetch', 'normalize', 'reconcile', 'schedule'];
const SUFFIXES = ['Options', 'Record', 'Result', 'Error', 'Service', 'Repository'];
const ERRORS = ['TypeError', 'RangeError', 'PaymentGatewayError', 'ValidationError', 'AssertionError'];

interface FakeFile {
  path: string;
  lines: string[];
  functions: string[];
}

/** A fictional TypeScript repository whose files are generated once and read many times. */
function createRepository(random: Random): FakeFile[] {
  const files: FakeFile[] = [];
  for (const module of MODULES) {
    const count = between(random, 4, 7);
    for (let index = 0; index < count; index += 1) {
      const noun = pick(random, NOUNS);
      const verb = pick(random, VERBS);
      const stem = `${verb}-${noun.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()}`;
      const test = random() < 0.3;
      const path = test ? `test/${module}/${stem}.test.ts` : `src/${module}/${stem}.ts`;
      if (files.some((file) => file.path === path)) continue;
      files.push(createFile(random, path, noun));
    }
  }
  return files;
}

function createFile(random: Random, path: string, mainNoun: string): FakeFile {
  const lines = [`/**`, ` * ${mainNoun} handling for ${path.split('/')[1]}.`, ` */`];
  const imports = between(random, 2, 5);
  for (let index = 0; index < imports; index += 1) {
    const noun = pick(random, NOUNS);
    lines.push(`import { ${noun}${pick(random, SUFFIXES)} } from '../${pick(random, MODULES)}/types.js';`);
  }
  const functions: string[] = [];
  const count = between(random, 4, 14);
  for (let index = 0; index < count; index += 1) {
    const noun = pick(random, NOUNS);
    const name = `${pick(random, VERBS)}${noun}${index % 3 === 0 ? pick(random, ['Total', 'Rule', 'Batch', 'State']) : ''}`;
    functions.push(name);
    lines.push('', `/** ${pick(random, VERBS)}s the ${noun.toLowerCase()} before it is stored. */`);
    lines.push(
      `export async function ${name}(input: ${noun}Options, repo: ${noun}Repository): Promise<${noun}Result> {`,
    );
    const statements = between(random, 3, 16);
    for (let line = 0; line < statements; line += 1) {
      const value = pick(random, ['amount', 'currency', 'customerId', 'dueDate', 'lineItems', 'taxRate']);
      switch (between(random, 0, 4)) {
        case 0:
          lines.push(`  const ${value}${line} = await repo.find${noun}(input.${value});`);
          break;
        case 1:
          lines.push(`  if (!input.${value}) {`);
          lines.push(
            `    throw new ${pick(random, ERRORS)}(\`missing ${value} for ${noun.toLowerCase()} \${input.id}\`);`,
          );
          lines.push('  }');
          break;
        case 2:
          lines.push(
            `  // TODO(${pick(random, ['ana', 'bo', 'chen'])}): ${value} rounding differs from the ledger (#${between(random, 100, 999)})`,
          );
          break;
        case 3:
          lines.push(
            `  const total${line} = input.lineItems.reduce((sum, item) => sum + item.${value} * ${between(random, 1, 100)}, 0);`,
          );
          break;
        default:
          lines.push(`  logger.debug('${name}', { id: input.id, ${value}: input.${value} });`);
      }
    }
    lines.push(
      `  return { ok: true, id: input.id, status: '${pick(random, ['paid', 'open', 'void', 'draft'])}' };`,
      '}',
    );
  }
  return { path, lines, functions };
}

/** A window of a file, numbered like `cat -n`, as read_file returns it. */
function readOutput(file: FakeFile, start: number, length: number): string {
  return file.lines
    .slice(start, start + length)
    .map((line, index) => `${String(start + index + 1).padStart(6)}\t${line}`)
    .join('\n');
}

function grepOutput(files: readonly FakeFile[], pattern: string, limit: number): string {
  const hits: string[] = [];
  for (const file of files) {
    file.lines.forEach((line, index) => {
      if (hits.length < limit && line.includes(pattern)) hits.push(`${file.path}:${index + 1}:${line}`);
    });
  }
  return hits.length > 0 ? hits.join('\n') : `(no matches for ${pattern})`;
}

function testOutput(random: Random, files: readonly FakeFile[], module: string, scale: number): string {
  const all = files.filter((file) => file.path.startsWith('test/'));
  const own = all.filter((file) => file.path.startsWith(`test/${module}/`));
  // A module without tests of its own makes the agent run the whole suite.
  const tests = own.length > 0 ? own : all;
  const lines = [` RUN  v4.1.0 /workspace/acme-billing`, ''];
  let failed = 0;
  let passed = 0;
  for (const file of tests) {
    const cases = between(random, 4, Math.round(12 * scale) + 4);
    for (let index = 0; index < cases; index += 1) {
      const ok = random() > 0.12;
      if (ok) passed += 1;
      else failed += 1;
      const name = pick(random, file.functions.length > 0 ? file.functions : ['works']);
      lines.push(
        ` ${ok ? '✓' : '×'} ${file.path} > ${name} > ${pick(random, ['rounds', 'rejects', 'keeps'])} ${pick(random, NOUNS).toLowerCase()} ${between(random, 1, 40)}ms`,
      );
    }
  }
  for (let index = 0; index < failed; index += 1) {
    const file = pick(random, files);
    const error = pick(random, ERRORS);
    lines.push(
      '',
      ` FAIL  ${pick(random, tests)?.path ?? file.path}`,
      `${error}: expected ${between(random, 1, 9999)} to equal ${between(random, 1, 9999)}`,
    );
    lines.push(
      `- Expected  "${pick(random, ['paid', 'open'])}"`,
      `+ Received  "${pick(random, ['void', 'draft'])}"`,
    );
    const depth = between(random, 3, 8);
    for (let frame = 0; frame < depth; frame += 1) {
      const inner = pick(random, files);
      lines.push(
        `    at ${pick(random, inner.functions.length > 0 ? inner.functions : ['anonymous'])} (/workspace/acme-billing/${inner.path}:${between(random, 1, inner.lines.length)}:${between(random, 3, 40)})`,
      );
    }
  }
  lines.push(
    '',
    ` Test Files  ${failed > 0 ? `${Math.min(failed, tests.length)} failed | ` : ''}${tests.length} passed`,
  );
  lines.push(`      Tests  ${failed > 0 ? `${failed} failed | ` : ''}${passed} passed (${failed + passed})`);
  lines.push(`   Duration  ${between(random, 800, 9000)}ms`);
  return lines.join('\n');
}

function compilerOutput(random: Random, files: readonly FakeFile[]): string {
  const count = between(random, 0, 12);
  if (count === 0) return '';
  const lines: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const file = pick(random, files);
    const noun = pick(random, NOUNS);
    lines.push(
      `${file.path}(${between(random, 1, file.lines.length)},${between(random, 1, 60)}): error TS${pick(random, ['2345', '2322', '2339', '7006'])}: Argument of type '${noun}Record' is not assignable to parameter of type '${noun}${pick(random, SUFFIXES)}'.`,
    );
  }
  lines.push('', `Found ${count} errors in ${Math.min(count, between(random, 1, 5))} files.`);
  return lines.join('\n');
}

function listingOutput(random: Random, files: readonly FakeFile[], module: string): string {
  const entries = files.filter((file) => file.path.split('/')[1] === module);
  const rows = [
    `total ${between(random, 20, 400)}`,
    'drwxr-xr-x  2 dev dev  4096 Mar  3 10:12 .',
    'drwxr-xr-x 11 dev dev  4096 Mar  3 10:12 ..',
  ];
  for (const file of entries) {
    rows.push(
      `-rw-r--r--  1 dev dev ${String(file.lines.length * 38).padStart(5)} Mar  ${between(random, 1, 9)} ${between(random, 10, 23)}:${String(between(random, 0, 59)).padStart(2, '0')} ${file.path.split('/').at(-1)}`,
    );
  }
  return rows.join('\n');
}

function serverLog(random: Random, scale: number): string {
  const lines: string[] = [];
  const count = Math.round(between(random, 40, 160) * scale);
  let time = Date.UTC(2025, 2, between(random, 1, 9), 10);
  for (let index = 0; index < count; index += 1) {
    const level = random() < 0.9 ? 'INFO' : pick(random, ['WARN', 'ERROR']);
    time += between(random, 5, 4000);
    lines.push(
      `${new Date(time).toISOString()} ${level} [req-${hex(random, 8)}] ${pick(random, ['POST /v1/invoices', 'GET /v1/customers', 'POST /v1/payments/capture', 'webhook delivered'])} ${level === 'ERROR' ? `${pick(random, ERRORS)}: gateway timeout after ${between(random, 1000, 30000)}ms` : `${between(random, 200, 204)} in ${between(random, 2, 400)}ms`}`,
    );
  }
  return lines.join('\n');
}

function diffOutput(random: Random, file: FakeFile): string {
  const start = between(random, 0, Math.max(0, file.lines.length - 12));
  const before = file.lines.slice(start, start + 8);
  const lines = [
    `diff --git a/${file.path} b/${file.path}`,
    `index ${hex(random, 7)}..${hex(random, 7)} 100644`,
    `--- a/${file.path}`,
    `+++ b/${file.path}`,
    `@@ -${start + 1},8 +${start + 1},9 @@`,
  ];
  before.forEach((line, index) => {
    if (index === 3)
      lines.push(
        `-${line}`,
        `+${line.replace('input', 'normalized')}`,
        '+  // rounding follows the ledger now',
      );
    else lines.push(` ${line}`);
  });
  return lines.join('\n');
}

interface Step {
  thought: string;
  tool: 'read_file' | 'bash' | 'grep';
  arguments: Record<string, unknown>;
  output: string;
}

function nextStep(random: Random, files: readonly FakeFile[], focus: FakeFile[], scale: number): Step {
  // Most work circles a few files; now and then the agent looks somewhere new.
  const file = random() < 0.7 ? pick(random, focus) : pick(random, files);
  const name = pick(random, file.functions.length > 0 ? file.functions : ['main']);
  const roll = random();
  if (roll < 0.38) {
    const length = Math.round(between(random, 60, 260) * scale);
    const start = random() < 0.6 ? 0 : between(random, 0, Math.max(0, file.lines.length - 40));
    return {
      thought: `Let me read \`${file.path}\` to see how \`${name}\` is wired.`,
      tool: 'read_file',
      arguments: { path: file.path, offset: start + 1, limit: length },
      output: readOutput(file, start, length),
    };
  }
  if (roll < 0.58) {
    return {
      thought: `Where else is \`${name}\` used?`,
      tool: 'grep',
      arguments: { pattern: name, path: 'src' },
      output: grepOutput(files, name, Math.round(60 * scale)),
    };
  }
  const kind = random();
  const module = file.path.split('/')[1] ?? 'lib';
  if (kind < 0.45) {
    return {
      thought: `Running the ${module} tests after the change to \`${name}\`.`,
      tool: 'bash',
      arguments: { command: `npx vitest run test/${module}` },
      output: testOutput(random, files, module, scale),
    };
  }
  if (kind < 0.6) {
    return {
      thought: 'Type-check before going on.',
      tool: 'bash',
      arguments: { command: 'npx tsc --noEmit -p tsconfig.json' },
      output: compilerOutput(random, files),
    };
  }
  if (kind < 0.72) {
    return {
      thought: `What is in src/${module}?`,
      tool: 'bash',
      arguments: { command: `ls -la src/${module}` },
      output: listingOutput(random, files, module),
    };
  }
  if (kind < 0.86) {
    return {
      thought: 'The server log should show the failing capture.',
      tool: 'bash',
      arguments: { command: 'tail -n 200 logs/api.log' },
      output: serverLog(random, scale),
    };
  }
  return {
    thought: `Checking my edit to \`${file.path}\`.`,
    tool: 'bash',
    arguments: { command: `git diff ${file.path}` },
    output: diffOutput(random, file),
  };
}

const SYSTEM_PROMPT = [
  'You are a coding agent working in the repository /workspace/acme-billing (TypeScript, Node 20, vitest).',
  'Work step by step: read the relevant files, make minimal changes, run the tests, and report what you changed.',
  'Tools:',
  '- read_file(path, offset?, limit?): returns the file with line numbers.',
  '- bash(command): runs a shell command in the repository root and returns stdout and stderr.',
  '- grep(pattern, path?): searches files for a fixed string and returns path:line:text.',
  'Rules: never edit files under vendor/ or generated/; keep public function signatures; prefer small diffs;',
  'run `npx vitest run` for the module you touched before you finish; never commit.',
].join('\n');

/** One recorded-style session of about `targetTokens` tokens. */
export function generateSession(options: GenerateSessionOptions): OpenAIChatMessage[] {
  const random = createRandom(options.seed);
  const scale = options.outputScale ?? 1;
  const files = createRepository(random);
  let focus = [pick(random, files), pick(random, files), pick(random, files)];
  const target = focus[0]!;
  const messages: OpenAIChatMessage[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    {
      role: 'user',
      content: `Invoices with a discount are stored with the wrong total. I think \`${target.functions[0] ?? 'computeInvoiceTotal'}\` in ${target.path} rounds before applying the tax rate. Fix it and make sure the ${target.path.split('/')[1]} tests pass.`,
    },
  ];
  let tokens = messages.reduce((sum, message) => sum + options.countTokens(String(message.content)), 0);
  let step = 0;
  while (tokens < options.targetTokens) {
    step += 1;
    if (step % 60 === 0) {
      focus = [pick(random, files), pick(random, files), focus[0]!];
      const request = `Also: ${focus[0]!.path} has the same problem in \`${focus[0]!.functions[0] ?? 'main'}\`; please fix it the same way.`;
      messages.push({ role: 'user', content: request });
      tokens += options.countTokens(request);
      continue;
    }
    const { thought, tool, arguments: args, output } = nextStep(random, files, focus, scale);
    const id = `call_${hex(random, 24)}`;
    const argumentsText = JSON.stringify(args);
    messages.push({
      role: 'assistant',
      content: thought,
      tool_calls: [{ id, type: 'function', function: { name: tool, arguments: argumentsText } }],
    });
    messages.push({ role: 'tool', tool_call_id: id, content: output });
    tokens += options.countTokens(thought) + options.countTokens(argumentsText) + options.countTokens(output);
  }
  messages.push({
    role: 'assistant',
    content: `Fixed: \`${target.functions[0] ?? 'main'}\` now applies the tax rate before rounding; the ${target.path.split('/')[1]} tests pass.`,
  });
  return messages;
}
