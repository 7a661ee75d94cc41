/**
 * One scenario with one real agent CLI, end to end: a scripted upstream, `selfgc proxy` pointed
 * at it (from the sources, as a child process, with its real flags), a recording relay in front
 * of the proxy, and the CLI pointed at the relay with a HOME and a project directory of its own.
 * Prints one JSON line (`ScenarioResult`) on standard output.
 *
 * Meant to run inside a network namespace of its own, where only loopback exists:
 *
 *   unshare -n -- sh -c 'ip link set lo up && exec node --import tsx e2e/run-scenario.ts <agent> <scenario> [--direct]'
 *
 * `--direct` leaves the proxy out (the CLI talks to the scripted upstream through the relay),
 * to tell a CLI or script problem from a proxy one.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type ScriptedRequest, type ScriptedUpstream, startScriptedUpstream } from '../src/testing/index.js';
import {
  AGENT_CLIS,
  type AgentCli,
  type AgentName,
  OUTPUT_RESERVE,
  PROXY_START_TIMEOUT_MS,
  RUN_TIMEOUT_MS,
} from './agent-clis.js';
import {
  attachedLine,
  createScenario,
  expectedAnswer,
  groupsOf,
  SCENARIO_NAMES,
  type ScenarioName,
  type ScenarioRun,
  stepName,
  uniqueStrings,
} from './agent-scenarios.js';
import { collectText } from './child-output.js';
import { CLIENT_HEADER, startRecordingRelay } from './recording-relay.js';
import type { RunRecord, ScenarioResult, UpstreamRecord } from './scenario-result.js';
import { createScriptedAgent } from './scripted-agent.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Characters of the CLI's output kept. */
const OUTPUT_TAIL = 16_000;

/**
 * What to stop when the runner itself is told to stop (SIGTERM, the suite's last resort): the
 * CLI's process group, the proxy, the temporary directory. Only what this runner started.
 */
const onTerminate = new Set<() => void>();

process.once('SIGTERM', () => {
  for (const stop of onTerminate) stop();
  process.exit(143);
});

interface ProxyChild {
  process: ChildProcess;
  url: string;
  exited: Promise<void>;
}

function startProxy(
  upstreamUrl: string,
  window: number,
  storeDirectory: string,
  result: ScenarioResult,
  clientCompactionAt: number | undefined,
) {
  const args = ['--import', 'tsx', join(ROOT, 'e2e', 'selfgc-from-source.ts'), 'proxy'];
  // The reserve the CLIs are set to, for a CLI that names none in its requests (Codex).
  args.push(
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--window',
    String(window),
    '--reserve-output',
    String(OUTPUT_RESERVE),
  );
  args.push('--store', `sqlite:${join(storeDirectory, 'selfgc.db')}`);
  args.push('--upstream-openai', upstreamUrl, '--upstream-anthropic', upstreamUrl);
  if (clientCompactionAt !== undefined) args.push('--client-compaction-at', String(clientCompactionAt));
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const terminate = () => child.kill('SIGKILL');
  onTerminate.add(terminate);
  void exited.then(() => onTerminate.delete(terminate));
  return new Promise<ProxyChild>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('selfgc proxy did not start listening in time')),
      PROXY_START_TIMEOUT_MS,
    );
    createInterface({ input: child.stderr! }).on('line', (line) => {
      const listening = /listening on (http:\/\/\S+)/.exec(line);
      if (listening !== null) {
        clearTimeout(timer);
        resolve({ process: child, url: listening[1]!, exited });
      }
      if (line.startsWith('{')) {
        try {
          result.proxyLog.push(JSON.parse(line) as Record<string, unknown>);
          return;
        } catch {
          // Not a log entry after all: kept as output below.
        }
      }
      result.proxyOutput.push(line);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`selfgc proxy exited before listening: ${result.proxyOutput.join('\n')}`));
    });
  });
}

async function stopProxy(proxy: ProxyChild): Promise<void> {
  proxy.process.kill('SIGTERM');
  const killed = setTimeout(() => proxy.process.kill('SIGKILL'), 10_000);
  await proxy.exited;
  clearTimeout(killed);
}

function writeFiles(files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
}

/** Write `files` (relative paths) into the project. */
function addFiles(project: string, files: Record<string, string>): void {
  writeFiles(Object.fromEntries(Object.entries(files).map(([path, text]) => [join(project, path), text])));
}

/** Replace the project's notes with `files`. */
function layOutProject(project: string, files: Record<string, string>): void {
  rmSync(join(project, 'notes'), { recursive: true, force: true });
  addFiles(project, files);
}

/**
 * Cut each conversation the CLI saved in `home` as JSON lines back to the tool result of `step`
 * (`ScenarioRun.rewindTo`): every line after the last that holds that step file's end goes.
 */
function rewindSavedSessions(home: string, step: number): void {
  const end = `${stepName(step)} ends with`;
  const files = readdirSync(home, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.jsonl'))
    .map((path) => join(home, path));
  let cut = 0;
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n');
    const last = lines.findLastIndex((line) => line.includes(end));
    if (last < 0) continue;
    writeFileSync(file, `${lines.slice(0, last + 1).join('\n')}\n`);
    cut += 1;
  }
  if (cut === 0)
    throw new Error(`no conversation saved as JSON lines in ${home} holds ${end}: nothing to rewind`);
}

interface CliOutcome {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  stdout: string;
  stderr: string;
}

function compactCommandOf(cli: AgentCli): string {
  if (cli.compactCommand === undefined) throw new Error(`${cli.name} has no compaction command to run`);
  return cli.compactCommand;
}

/** Run the CLI once in its own process group, which is stopped whole when it overruns. */
function runCli(
  cli: AgentCli,
  home: string,
  project: string,
  baseUrl: string,
  run: ScenarioRun,
): Promise<CliOutcome> {
  const launch = cli.launch({
    home,
    project,
    baseUrl,
    prompt: run.compacts === true ? compactCommandOf(cli) : run.prompt,
    ...(run.attach === undefined ? {} : { attach: run.attach }),
    continues: run.continues === true,
    autoCompacts: run.autoCompacts === true,
  });
  writeFiles(launch.files);
  const started = Date.now();
  const child = spawn(launch.command, launch.args, {
    cwd: project,
    env: launch.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const stdout = collectText(child.stdout, OUTPUT_TAIL);
  const stderr = collectText(child.stderr, OUTPUT_TAIL);
  let timedOut = false;
  const stopGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The group is gone already.
    }
  };
  const timer = setTimeout(() => {
    timedOut = true;
    stopGroup('SIGKILL');
  }, RUN_TIMEOUT_MS);
  const terminate = () => stopGroup('SIGKILL');
  onTerminate.add(terminate);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      clearTimeout(timer);
      onTerminate.delete(terminate);
      resolve({
        exitCode: null,
        signal: null,
        timedOut,
        durationMs: 0,
        stdout: stdout(),
        stderr: `${stderr()}\n${error.message}`,
      });
    });
    child.once('close', (exitCode, signal) => {
      clearTimeout(timer);
      onTerminate.delete(terminate);
      // Whatever the CLI left running in its group (a shell it spawned) goes with it.
      stopGroup('SIGKILL');
      resolve({
        exitCode,
        signal,
        timedOut,
        durationMs: Date.now() - started,
        stdout: stdout(),
        stderr: stderr(),
      });
    });
  });
}

interface RunPlace {
  cli: AgentCli;
  /** The CLI's HOME, of this run alone when runs go at once (a CLI's settings name its base URL). */
  home(run: ScenarioRun): string;
  project: string;
  /** Where the run's relay forwards to: the proxy, or the upstream itself (`--direct`). */
  target: string;
  upstream: ScriptedUpstream;
}

/**
 * One run: the CLI behind a relay of its own, which names the run in every request it forwards
 * (`CLIENT_HEADER`), so the upstream requests of the run are the ones that name it, whatever ran
 * beside it.
 */
async function playRun(place: RunPlace, run: ScenarioRun): Promise<RunRecord> {
  const home = place.home(run);
  if (run.rewindTo !== undefined) rewindSavedSessions(home, run.rewindTo);
  const relay = await startRecordingRelay(place.target, run.label);
  let outcome: CliOutcome;
  try {
    outcome = await runCli(place.cli, home, place.project, relay.url, run);
  } finally {
    await relay.close();
  }
  const attached = attachedLine(run);
  return {
    label: run.label,
    marker: run.marker,
    uniqueStrings: uniqueStrings(run),
    expectedAnswer: expectedAnswer(run),
    ...(run.secret === undefined ? {} : { secret: run.secret }),
    ...(run.continues === true ? { continues: true } : {}),
    ...(run.compacts === true ? { compacts: true } : {}),
    ...(run.autoCompacts === true ? { autoCompacts: true } : {}),
    ...(run.alongside === true ? { alongside: true } : {}),
    ...(run.rewindTo === undefined ? {} : { rewindTo: run.rewindTo }),
    ...(attached === undefined ? {} : { attachedLine: attached }),
    ...outcome,
    relayStartedAt: relay.startedAt,
    client: relay.exchanges,
    upstream: place.upstream.requests
      .filter((request) => request.headers[CLIENT_HEADER] === run.label)
      .map(
        (request): UpstreamRecord => ({
          index: request.index,
          method: request.method,
          path: request.path,
          headers: request.headers,
          body: request.body,
        }),
      ),
  };
}

/** What reached the upstream naming no run: requests no run's record holds, so none was checked. */
function unattributed(upstream: ScriptedUpstream, runs: readonly ScenarioRun[]): string | undefined {
  const labels = new Set(runs.map((run) => run.label));
  const lost = upstream.requests.filter((request) => !labels.has(request.headers[CLIENT_HEADER] ?? ''));
  if (lost.length === 0) return undefined;
  const paths = lost.slice(0, 3).map((request) => `#${request.index} ${request.method} ${request.path}`);
  return `${lost.length} upstream request(s) named no run in ${CLIENT_HEADER} (${paths.join(', ')}): the header the relays add did not reach the upstream with them, so no run's checks held them`;
}

async function runScenario(
  agent: AgentName,
  scenarioName: ScenarioName,
  direct: boolean,
): Promise<ScenarioResult> {
  const cli = AGENT_CLIS[agent];
  const scenario = createScenario(scenarioName);
  if (scenario.runs.some((run) => run.compacts === true)) compactCommandOf(cli);
  const autoCompacts = scenario.runs.some((run) => run.autoCompacts === true);
  const window = (autoCompacts ? cli.autoCompaction?.window : undefined) ?? cli.window;
  const result: ScenarioResult = {
    agent,
    scenario: scenarioName,
    window,
    proxied: !direct,
    runs: [],
    proxyLog: [],
    proxyOutput: [],
  };
  const base = mkdtempSync(join(tmpdir(), `selfgc-e2e-${agent}-`));
  onTerminate.add(() => rmSync(base, { recursive: true, force: true }));
  const project = join(base, 'project');
  const home = join(base, 'home');
  mkdirSync(project, { recursive: true });
  mkdirSync(join(home, 'tmp'), { recursive: true });
  // A run among others that go at once takes a copy of the HOME the runs before it left.
  const homeOf = (run: ScenarioRun) => {
    const group = groupsOf(scenario.runs).find((runs) => runs.includes(run))!;
    if (group.length === 1) return home;
    const own = join(base, `home-${run.label}`);
    // Links as they are: cpSync would point a relative one back into the HOME it copies.
    cpSync(home, own, { recursive: true, verbatimSymlinks: true });
    return own;
  };
  // Every request names the run it serves: the relays add it (`CLIENT_HEADER`).
  const runOf = (request: ScriptedRequest) =>
    scenario.runs.find((run) => run.label === request.headers[CLIENT_HEADER]) ?? scenario.runs[0]!;
  const upstream = await startScriptedUpstream({
    script: createScriptedAgent({ tools: cli.tools, project, run: runOf }),
    models: ['scripted-model'],
    // The ChatGPT backend closes each response with no `output`: its items come in their events.
    ...(cli.name === 'codex-chatgpt' ? { emptyClosingOutput: true } : {}),
    ...scenario.upstream,
  });
  let proxy: ProxyChild | undefined;
  try {
    // The proxy reports the client's whole prompt from where the CLI compacts.
    const clientCompactionAt = autoCompacts ? cli.autoCompaction?.at : undefined;
    proxy = direct ? undefined : await startProxy(upstream.url, window, base, result, clientCompactionAt);
    const place: RunPlace = { cli, home: homeOf, project, target: proxy?.url ?? upstream.url, upstream };
    for (const group of groupsOf(scenario.runs)) {
      const files = Object.assign({}, ...group.map((run) => run.files)) as Record<string, string>;
      // A resumed conversation goes on in the project as the run before left it.
      if (group.some((run) => run.continues === true)) addFiles(project, files);
      else layOutProject(project, files);
      // Every run of the group ends before anything is torn down, one that failed to start too.
      const played = await Promise.allSettled(group.map((run) => playRun(place, run)));
      for (const outcome of played) if (outcome.status === 'rejected') throw outcome.reason;
      result.runs.push(...played.map((outcome) => (outcome as PromiseFulfilledResult<RunRecord>).value));
    }
    const lost = unattributed(upstream, scenario.runs);
    if (lost !== undefined) result.error = lost;
  } catch (error) {
    result.error = error instanceof Error ? error.message : String(error);
  } finally {
    if (proxy !== undefined) await stopProxy(proxy);
    await upstream.close();
    rmSync(base, { recursive: true, force: true });
  }
  return result;
}

function parseArguments(argv: string[]): { agent: AgentName; scenario: ScenarioName; direct: boolean } {
  const [agent, scenario, ...flags] = argv;
  const usage = `usage: run-scenario <${Object.keys(AGENT_CLIS).join('|')}> <${SCENARIO_NAMES.join('|')}> [--direct]`;
  if (agent === undefined || !(agent in AGENT_CLIS)) throw new Error(usage);
  if (scenario === undefined || !SCENARIO_NAMES.includes(scenario as ScenarioName)) throw new Error(usage);
  if (flags.some((flag) => flag !== '--direct')) throw new Error(usage);
  return {
    agent: agent as AgentName,
    scenario: scenario as ScenarioName,
    direct: flags.includes('--direct'),
  };
}

try {
  const options = parseArguments(process.argv.slice(2));
  const result = await runScenario(options.agent, options.scenario, options.direct);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (error) {
  process.stderr.write(`run-scenario: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
}
