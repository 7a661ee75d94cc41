/**
 * What `run-scenario.ts` prints (one JSON line) and the suite validates: per run, every request
 * the client sent and the scripted upstream received, and how the CLI ended.
 */
import type { AgentName } from './agent-clis.js';
import type { ScenarioName } from './agent-scenarios.js';
import type { RecordedExchange } from './recording-relay.js';

/** One request the scripted upstream received. */
export interface UpstreamRecord {
  index: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON body (the raw text when it was not JSON). */
  body: unknown;
}

export interface RunRecord {
  label: string;
  /** The marker every file of this run carries. */
  marker: string;
  /** What no other run may see (`uniqueStrings`). */
  uniqueStrings: string[];
  /** What the CLI must print. */
  expectedAnswer: string;
  /** The secret the run must recover (`streaming-recovery`, the resumed run of `resume`). */
  secret?: string;
  /** The run resumed the previous run's conversation (`resume`). */
  continues?: boolean;
  /** The run only had the CLI compact its conversation (`compaction`): it prints no answer. */
  compacts?: boolean;
  /** The CLI was to compact by itself during the run (`ScenarioRun.autoCompacts`). */
  autoCompacts?: boolean;
  /** The step the CLI's saved conversation was cut back to before the run (`ScenarioRun.rewindTo`). */
  rewindTo?: number;
  /** The run went at once with the run before it (`ScenarioRun.alongside`). */
  alongside?: boolean;
  /** A line of the file the prompt came with (`attachedLine`), when the scenario attaches one. */
  attachedLine?: string;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  /** The end of the CLI's standard output and error. */
  stdout: string;
  stderr: string;
  /** When the run's relay started (epoch milliseconds): its exchanges' `at` count from it. */
  relayStartedAt: number;
  /** What the CLI sent (through the recording relay), with the answers it got. */
  client: RecordedExchange[];
  /** What reached the scripted upstream for this run (the requests its relay named it in). */
  upstream: UpstreamRecord[];
}

export interface ScenarioResult {
  agent: AgentName;
  scenario: ScenarioName;
  /** The proxy's `--window`. */
  window: number;
  /** False with `--direct` (no proxy between the CLI and the scripted upstream). */
  proxied: boolean;
  runs: RunRecord[];
  /** The proxy's JSON log entries (one per request). */
  proxyLog: Array<Record<string, unknown>>;
  /** Other lines the proxy printed (start, stop, errors). */
  proxyOutput: string[];
  /** Set when the runner itself failed (the proxy did not start, a CLI could not be spawned). */
  error?: string;
}
