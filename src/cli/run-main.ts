/**
 * The `selfgc` entry: the one place that touches `process` (argv, exit codes, stdout/stderr)
 * and wires concrete parts together. Every error becomes one line and an exit code from
 * `ERROR_TABLE`; a stack trace is printed only with SELFGC_DEBUG=1.
 */
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { BadInputError, ERROR_TABLE, toSelfGcError } from '../core/errors.js';
import { STRATEGY_NAMES } from '../eval/strategies/registry.js';
import { DEFAULT_HORIZON } from '../eval/train-valuator.js';
import { DEFAULT_CLIENT_COMPACTION_TOKENS } from '../proxy/client-compaction-signal.js';
import { DEFAULT_GOVERNANCE_MAX_BYTES } from '../proxy/proxy-options.js';
import { type OptionSpecs, parseCommandArgs, parseDuration, positiveInteger } from './cli-args.js';
import type { CliIo } from './cli-io.js';
import { EVAL_HELP, evalCommand } from './eval-command.js';
import { INSPECT_HELP, inspectCommand } from './inspect-command.js';
import { JUDGE_FLAGS, LLM_FLAGS, readJudgeFlags, readLlmEndpoint } from './llm-flags.js';
import { MCP_HELP, mcpCommand, storeSessionOf } from './mcp-command.js';
import { readModelFlag } from './model-flag.js';
import { DEFAULT_RETAIN, PROXY_HELP, proxyCommand } from './proxy-command.js';
import { REPLAY_HELP, replayCommand } from './replay-command.js';
import { keyHashPrefix, openExistingStore, SESSIONS_HELP, sessionsCommand } from './sessions-command.js';
import { formatStoredSession, readStoredSession } from './stored-session.js';
import { TRAIN_HELP, trainCommand } from './train-command.js';

export const MAIN_HELP = `selfgc — self-governing context for long-running LLM agents

Usage: selfgc <command> [options]

Commands:
  eval <files...>      evaluate strategies on recorded sessions (prune rate, no-impact, cost)
  replay <files...>    write the view of one strategy at each cut or call, as JSON lines
  inspect <file>       print the ledger (objects, tokens, anchors, states) of a session
                       (--store URL --session ID: a live proxy session, from its store)
  proxy                run the OpenAI/Anthropic-compatible governing proxy
  sessions <action>    list, show, delete or purge the sessions of a proxy's store
  mcp                  serve a session's removed content to an agent over MCP (stdio)
  train <files...>     fit the valuator's model on recorded sessions (--model FILE uses it)

Run "selfgc <command> --help" (or "selfgc help <command>") for the options of a command, and
"selfgc --version" for the version.
`;

/** The version in package.json, two folders up from both src/cli and dist/cli. */
function packageVersion(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

function showHelp(io: CliIo, text: string): number {
  io.stdout(text);
  return 0;
}

/** Governance worker threads: 0 governs on the proxy's own thread. */
function threadCount(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0 || number > 64)
    throw new BadInputError(`--governance-threads must be an integer in [0, 64], got "${value}"`);
  return number;
}

/** A TCP port, 0 for any free one. */
function portNumber(value: string | undefined): number {
  if (value === undefined) return 8787;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0 || number > 65535)
    throw new BadInputError(`--port must be 0..65535, got "${value}"`);
  return number;
}

/** An upstream's base URL: http(s), the request's path and query are appended to it. */
function upstreamUrl(value: string | boolean | undefined, flag: string, fallback: string): string {
  if (typeof value !== 'string') return fallback;
  let parsed: URL | undefined;
  try {
    parsed = new URL(value);
  } catch {
    parsed = undefined;
  }
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:')
    throw new BadInputError(`${flag} must be an http(s) URL such as ${fallback}, got "${value}"`);
  if (parsed.search !== '' || parsed.hash !== '')
    throw new BadInputError(`${flag} is a base URL: it takes no ?query or #fragment, got "${value}"`);
  return value;
}

function keepShare(value: string | undefined): number | 'auto' {
  if (value === undefined || value === 'auto') return 'auto';
  const number = Number(value);
  if (!(number > 0 && number <= 1))
    throw new BadInputError(`--keep must be "auto" or a share in (0, 1], got "${value}"`);
  return number;
}

function parse(args: string[], options: OptionSpecs) {
  return parseCommandArgs(args, options);
}

/** `--retain`: a duration, or `off` to keep sessions until purged. */
function retention(value: string | undefined): number | undefined {
  const text = value ?? DEFAULT_RETAIN;
  return text === 'off' ? undefined : parseDuration(text, '--retain');
}

/** `selfgc inspect --store URL --session ID`: a live proxy session from its store. */
async function inspectStored(
  io: CliIo,
  values: Record<string, string | boolean | undefined>,
): Promise<number> {
  if (typeof values.session !== 'string')
    throw new BadInputError('inspect --store needs --session ID (see selfgc sessions list)');
  const prefix = typeof values['key-hash'] === 'string' ? keyHashPrefix(values['key-hash']) : '';
  const store = await openExistingStore(values.store as string);
  try {
    const report = await readStoredSession(store, `${prefix}${values.session}`);
    io.stdout(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatStoredSession(report));
    return 0;
  } finally {
    await store.close();
  }
}

/** Run one command line; returns the exit code. `stdin` is read only by `mcp`. */
export async function runCommand(argv: string[], io: CliIo, stdin?: Readable): Promise<number> {
  const [command, ...rest] = argv;
  // `selfgc help eval` is `selfgc eval --help`.
  if (command === 'help' && rest.length > 0) return runCommand([rest[0]!, '--help'], io, stdin);
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.stdout(MAIN_HELP);
    return command === undefined ? 2 : 0;
  }
  if (command === '--version') {
    io.stdout(`selfgc ${packageVersion()}\n`);
    return 0;
  }
  const commandLine = ['selfgc', ...argv].join(' ');
  switch (command) {
    case 'inspect': {
      const { values, positionals } = parse(rest, {
        session: { type: 'string' },
        json: { type: 'boolean' },
        store: { type: 'string' },
        'key-hash': { type: 'string' },
      });
      if (values.help) return showHelp(io, INSPECT_HELP);
      if (typeof values.store === 'string') {
        if (positionals.length > 0)
          throw new BadInputError('inspect takes a sessions .jsonl file or --store URL, not both');
        return inspectStored(io, values);
      }
      if (positionals.length !== 1)
        throw new BadInputError('inspect takes exactly one sessions .jsonl file (see selfgc inspect --help)');
      if (values['key-hash'] !== undefined)
        throw new BadInputError('--key-hash names a session of a store: it needs --store URL');
      return inspectCommand(io, positionals[0]!, {
        ...(typeof values.session === 'string' ? { session: values.session } : {}),
        json: values.json === true,
      });
    }
    case 'replay': {
      const { values, positionals } = parse(rest, {
        strategy: { type: 'string' },
        mode: { type: 'string' },
        window: { type: 'string' },
        keep: { type: 'string' },
        cuts: { type: 'string' },
        emit: { type: 'string' },
        ...LLM_FLAGS,
      });
      if (values.help) return showHelp(io, REPLAY_HELP);
      if (positionals.length === 0)
        throw new BadInputError('replay needs at least one sessions .jsonl file (see selfgc replay --help)');
      if (typeof values.strategy !== 'string')
        throw new BadInputError(
          `replay needs --strategy (one of ${STRATEGY_NAMES.join(', ')}, or selfgc-llm with --llm-url)`,
        );
      if (typeof values.emit !== 'string')
        throw new BadInputError('replay needs --emit FILE for the JSON lines');
      const mode = values.mode ?? 'cut';
      if (mode !== 'cut' && mode !== 'session')
        throw new BadInputError(`--mode must be cut or session, got "${String(mode)}"`);
      // An option of the other mode would be ignored: the user meant something else (its default,
      // `auto`, which a script may always pass, changes nothing).
      const otherModes = { cut: ['window'], session: ['keep', 'cuts'] } as const;
      const stray = otherModes[mode].find((name) => values[name] !== undefined && values[name] !== 'auto');
      if (stray !== undefined)
        throw new BadInputError(
          `--${stray} applies to ${mode === 'cut' ? 'session' : 'cut'} mode only, not --mode ${mode}`,
        );
      const llm = readLlmEndpoint(values, io.env);
      return replayCommand(io, positionals, {
        strategy: values.strategy,
        mode,
        window: positiveInteger(values.window as string | undefined, '--window', 32000),
        keep: keepShare(values.keep as string | undefined),
        cuts: typeof values.cuts === 'string' ? values.cuts : 'auto',
        emit: values.emit,
        ...(llm ? { llm } : {}),
      });
    }
    case 'train': {
      const { values, positionals } = parse(rest, {
        out: { type: 'string' },
        'calls-per-session': { type: 'string' },
        horizon: { type: 'string' },
        'leave-one-family-out': { type: 'boolean' },
      });
      if (values.help) return showHelp(io, TRAIN_HELP);
      if (typeof values.out !== 'string') throw new BadInputError('train needs --out FILE for the model');
      return trainCommand(io, positionals, {
        out: values.out,
        callsPerSession: positiveInteger(
          values['calls-per-session'] as string | undefined,
          '--calls-per-session',
          16,
        ),
        horizon: positiveInteger(values.horizon as string | undefined, '--horizon', DEFAULT_HORIZON),
        leaveOneFamilyOut: values['leave-one-family-out'] === true,
      });
    }
    case 'eval': {
      const { values, positionals } = parse(rest, {
        strategies: { type: 'string' },
        modes: { type: 'string' },
        window: { type: 'string' },
        'cuts-per-session': { type: 'string' },
        workers: { type: 'string' },
        json: { type: 'string' },
        report: { type: 'string' },
        markdown: { type: 'string' },
        model: { type: 'string' },
        'leave-one-family-out': { type: 'boolean' },
        ...LLM_FLAGS,
        ...JUDGE_FLAGS,
      });
      if (values.help) return showHelp(io, EVAL_HELP);
      const entryModel = readModelFlag(values.model);
      const modes = (typeof values.modes === 'string' ? values.modes : 'cut,session')
        .split(',')
        .map((mode) => mode.trim());
      for (const mode of modes)
        if (mode !== 'cut' && mode !== 'session')
          throw new BadInputError(`--modes takes cut and/or session, got "${mode}"`);
      const strategies =
        typeof values.strategies === 'string'
          ? values.strategies.split(',').map((name) => name.trim())
          : STRATEGY_NAMES;
      // A name given twice would run twice and count its cuts twice in the intervals.
      for (const [flag, names] of [
        ['--modes', modes],
        ['--strategies', strategies],
      ] as const) {
        const twice = names.find((name, index) => names.indexOf(name) !== index);
        if (twice !== undefined) throw new BadInputError(`${flag} names "${twice}" twice`);
      }
      if (
        values.window !== undefined &&
        !modes.includes('session') &&
        values['leave-one-family-out'] !== true
      )
        throw new BadInputError('--window is the window of session mode: add session to --modes');
      if (values['cuts-per-session'] !== undefined && !modes.includes('cut'))
        throw new BadInputError('--cuts-per-session sets the cuts of cut mode: add cut to --modes');
      const llm = readLlmEndpoint(values, io.env);
      const judge = readJudgeFlags(values, llm, modes);
      return evalCommand(
        io,
        positionals,
        {
          strategies,
          modes: modes as Array<'cut' | 'session'>,
          window: positiveInteger(values.window as string | undefined, '--window', 32000),
          cutsPerSession: positiveInteger(
            values['cuts-per-session'] as string | undefined,
            '--cuts-per-session',
            4,
          ),
          ...(typeof values.workers === 'string'
            ? { workers: positiveInteger(values.workers, '--workers', 2) }
            : {}),
          ...(typeof values.json === 'string' ? { json: values.json } : {}),
          ...(typeof values.report === 'string' ? { report: values.report } : {}),
          ...(typeof values.markdown === 'string' ? { markdown: values.markdown } : {}),
          ...(llm ? { llm } : {}),
          ...(judge ? { judgeSample: judge.sample, judgePairs: judge.pairs } : {}),
          ...(entryModel === undefined ? {} : { entryModel }),
          ...(typeof values.model === 'string' && values.model !== 'default' && values.model !== 'none'
            ? { modelFile: values.model }
            : {}),
          leaveOneFamilyOut: values['leave-one-family-out'] === true,
        },
        commandLine,
      );
    }
    case 'proxy': {
      const { values, positionals } = parse(rest, {
        port: { type: 'string' },
        host: { type: 'string' },
        'upstream-openai': { type: 'string' },
        'upstream-anthropic': { type: 'string' },
        window: { type: 'string' },
        'reserve-output': { type: 'string' },
        store: { type: 'string' },
        'ab-share': { type: 'string' },
        'fail-closed': { type: 'boolean' },
        'no-recovery': { type: 'boolean' },
        'agent-tools': { type: 'boolean' },
        'governance-threads': { type: 'string' },
        'governance-max-bytes': { type: 'string' },
        'governance-time-budget': { type: 'string' },
        'client-compaction-at': { type: 'string' },
        'store-timeout': { type: 'string' },
        'upstream-timeout': { type: 'string' },
        retain: { type: 'string' },
        'tenant-header': { type: 'string' },
        'tenant-from-address': { type: 'boolean' },
        model: { type: 'string' },
      });
      if (values.help) return showHelp(io, PROXY_HELP);
      if (positionals.length > 0)
        throw new BadInputError(
          `proxy takes no positional arguments, got "${positionals.join(' ')}" (--port N for a port; see selfgc proxy --help)`,
        );
      const entryModel = readModelFlag(values.model);
      const retainMs = retention(values.retain as string | undefined);
      const tenantHeader = values['tenant-header'] as string | undefined;
      if (tenantHeader !== undefined && !/^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(tenantHeader))
        throw new BadInputError(`--tenant-header: expected a header name, got "${tenantHeader}"`);
      if (values['agent-tools'] === true && values['no-recovery'] === true)
        throw new BadInputError(
          "--agent-tools needs recovery: the proxy answers the agent's calls; leave out --no-recovery",
        );
      const abShare = values['ab-share'] === undefined ? undefined : Number(values['ab-share']);
      // Number('') is 0: an empty share would silently govern no one.
      if (
        abShare !== undefined &&
        (String(values['ab-share']).trim() === '' || !(abShare >= 0 && abShare <= 1))
      ) {
        throw new BadInputError(`--ab-share must be a share in [0, 1], got "${String(values['ab-share'])}"`);
      }
      return proxyCommand(io, {
        port: portNumber(values.port as string | undefined),
        host: typeof values.host === 'string' ? values.host : '127.0.0.1',
        upstreamOpenai: upstreamUrl(values['upstream-openai'], '--upstream-openai', 'https://api.openai.com'),
        upstreamAnthropic: upstreamUrl(
          values['upstream-anthropic'],
          '--upstream-anthropic',
          'https://api.anthropic.com',
        ),
        ...(typeof values.window === 'string'
          ? { window: positiveInteger(values.window, '--window', 128000) }
          : {}),
        ...(typeof values['reserve-output'] === 'string'
          ? { reserveOutput: positiveInteger(values['reserve-output'], '--reserve-output', 16384) }
          : {}),
        ...(typeof values['governance-threads'] === 'string'
          ? { governanceThreads: threadCount(values['governance-threads']) }
          : {}),
        store: typeof values.store === 'string' ? values.store : 'sqlite:./selfgc.db',
        ...(retainMs === undefined ? {} : { retainMs }),
        ...(typeof values['upstream-timeout'] === 'string'
          ? { upstreamTimeoutMs: parseDuration(values['upstream-timeout'], '--upstream-timeout', 's') }
          : {}),
        ...(typeof values['store-timeout'] === 'string'
          ? { storeTimeoutMs: parseDuration(values['store-timeout'], '--store-timeout', 'ms') }
          : {}),
        ...(typeof values['governance-max-bytes'] === 'string'
          ? {
              governanceMaxBytes: positiveInteger(
                values['governance-max-bytes'],
                '--governance-max-bytes',
                DEFAULT_GOVERNANCE_MAX_BYTES,
              ),
            }
          : {}),
        ...(typeof values['governance-time-budget'] === 'string'
          ? {
              governanceTimeBudgetMs: parseDuration(
                values['governance-time-budget'],
                '--governance-time-budget',
                'ms',
              ),
            }
          : {}),
        ...(typeof values['client-compaction-at'] === 'string'
          ? {
              clientCompactionTokens:
                values['client-compaction-at'] === 'off'
                  ? (false as const)
                  : positiveInteger(
                      values['client-compaction-at'],
                      '--client-compaction-at (tokens, or off)',
                      DEFAULT_CLIENT_COMPACTION_TOKENS,
                    ),
            }
          : {}),
        ...(tenantHeader !== undefined || values['tenant-from-address'] === true
          ? {
              tenancy: {
                ...(tenantHeader === undefined ? {} : { header: tenantHeader.toLowerCase() }),
                ...(values['tenant-from-address'] === true ? { fromAddress: true } : {}),
              },
            }
          : {}),
        ...(abShare === undefined ? {} : { abShare }),
        failClosed: values['fail-closed'] === true,
        recovery: values['no-recovery'] !== true,
        agentTools: values['agent-tools'] === true,
        ...(entryModel === undefined ? {} : { entryModel }),
      });
    }
    case 'sessions': {
      const { values, positionals } = parse(rest, {
        store: { type: 'string' },
        'key-hash': { type: 'string' },
        'older-than': { type: 'string' },
        limit: { type: 'string' },
        json: { type: 'boolean' },
      });
      const [action, ...ids] = positionals;
      if (values.help) return showHelp(io, SESSIONS_HELP);
      if (action === undefined) {
        io.stdout(SESSIONS_HELP);
        return 2;
      }
      if (action !== 'list' && action !== 'show' && action !== 'delete' && action !== 'purge')
        throw new BadInputError(`sessions: unknown action "${action}" (list, show, delete or purge)`);
      if (action === 'show' && ids.length !== 1)
        throw new BadInputError('sessions show takes one session id');
      if (action === 'delete' && ids.length === 0)
        throw new BadInputError('sessions delete needs session ids');
      if ((action === 'list' || action === 'purge') && ids.length > 0)
        throw new BadInputError(`sessions ${action} takes no session ids`);
      if (action === 'purge' && typeof values['older-than'] !== 'string')
        throw new BadInputError('sessions purge needs --older-than T (e.g. 7d)');
      // An option the action does not take would be ignored: purge --limit 10 would purge all.
      const takes = { list: ['limit', 'json'], show: ['json'], delete: [], purge: ['older-than'] } as const;
      const stray = ['limit', 'json', 'older-than'].find(
        (name) => values[name] !== undefined && !(takes[action] as readonly string[]).includes(name),
      );
      if (stray !== undefined) throw new BadInputError(`sessions ${action} takes no --${stray}`);
      return sessionsCommand(io, {
        action,
        ids,
        store: typeof values.store === 'string' ? values.store : 'sqlite:./selfgc.db',
        ...(typeof values['key-hash'] === 'string' ? { keyHash: values['key-hash'] } : {}),
        ...(typeof values['older-than'] === 'string'
          ? { olderThanMs: parseDuration(values['older-than'], '--older-than') }
          : {}),
        ...(typeof values.limit === 'string'
          ? { limit: positiveInteger(values.limit, '--limit', 1000) }
          : {}),
        json: values.json === true,
      });
    }
    case 'mcp': {
      const { values, positionals } = parse(rest, {
        store: { type: 'string' },
        session: { type: 'string' },
        'key-hash': { type: 'string' },
        'api-key-env': { type: 'string' },
      });
      if (values.help) return showHelp(io, MCP_HELP);
      if (positionals.length > 0)
        throw new BadInputError('mcp takes no positional arguments (see selfgc mcp --help)');
      if (stdin === undefined) throw new BadInputError('mcp needs a stdin to read from');
      const sessionId = storeSessionOf(
        {
          ...(typeof values.session === 'string' ? { session: values.session } : {}),
          ...(typeof values['key-hash'] === 'string' ? { keyHash: values['key-hash'] } : {}),
          ...(typeof values['api-key-env'] === 'string' ? { apiKeyEnv: values['api-key-env'] } : {}),
        },
        io.env ?? {},
      );
      return mcpCommand(
        io,
        { store: typeof values.store === 'string' ? values.store : 'sqlite:./selfgc.db', sessionId },
        stdin,
      );
    }
    default:
      throw new BadInputError(`unknown command "${command}" (run selfgc --help)`);
  }
}

/** The process entry: binds the real stdout/stderr and turns errors into exit codes. */
export async function runMain(argv = process.argv.slice(2)): Promise<void> {
  // A closed pipe (selfgc inspect … | head) ends the output, not the program with a trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
  });
  const tty = process.stderr.isTTY === true;
  let lastPercent = -1;
  const io: CliIo = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    progress(done, total, label) {
      const percent = Math.floor((done / Math.max(1, total)) * 100);
      if (tty) {
        const width = 30;
        const filled = Math.round((percent / 100) * width);
        process.stderr.write(
          `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${label}${done === total ? '\n' : ''}`,
        );
      } else if (percent >= lastPercent + 10 || done === total) {
        lastPercent = percent;
        process.stderr.write(`${done}/${total} ${label} (${percent}%)\n`);
      }
    },
    cwd: process.cwd(),
    argv0: 'selfgc',
    env: process.env,
  };
  try {
    process.exitCode = await runCommand(argv, io, process.stdin);
  } catch (error) {
    const normalised = toSelfGcError(error);
    process.stderr.write(`selfgc: ${normalised.message}\n`);
    if (process.env.SELFGC_DEBUG === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
    process.exitCode = ERROR_TABLE[normalised.code].exitCode;
  }
}
