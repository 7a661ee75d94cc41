/**
 * Start `run-scenario.ts` inside a network namespace of its own (`unshare -n`, loopback only),
 * so the scripted upstream, the proxy and the CLI can reach each other and nothing else, and
 * read the `ScenarioResult` it prints.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_CLIS, type AgentName } from './agent-clis.js';
import type { ScenarioName } from './agent-scenarios.js';
import { collectText } from './child-output.js';
import type { ScenarioResult } from './scenario-result.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Why the suite cannot run here, or undefined when it can. */
export function namespaceUnavailable(): string | undefined {
  const probe = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up'], { encoding: 'utf8' });
  if (probe.error !== undefined) return `unshare could not be started (${probe.error.message})`;
  if (probe.status !== 0) {
    const said = probe.stderr.trim().split('\n')[0] ?? '';
    return `"unshare -n" with "ip link set lo up" is not permitted here (needs root or CAP_SYS_ADMIN): ${said}`;
  }
  return undefined;
}

/** Why this CLI cannot run here (not installed), or undefined when it can. */
export function agentUnavailable(agent: AgentName): string | undefined {
  const binary = AGENT_CLIS[agent].binary;
  if (existsSync(binary)) return undefined;
  return `${binary} is missing: install the agent CLIs with "npm ci --prefix e2e/agents"`;
}

/** Run one scenario; the runner's own limits end it first, `timeoutMs` is the last resort. */
export function runInNamespace(
  agent: AgentName,
  scenario: ScenarioName,
  options: { direct?: boolean; timeoutMs: number },
): Promise<ScenarioResult> {
  const runner = [process.execPath, '--import', 'tsx', 'e2e/run-scenario.ts', agent, scenario];
  if (options.direct === true) runner.push('--direct');
  const quoted = runner.map((part) => `'${part.replaceAll("'", `'\\''`)}'`).join(' ');
  const child = spawn('unshare', ['-n', '--', 'sh', '-c', `ip link set lo up && exec ${quoted}`], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout = collectText(child.stdout);
  const stderr = collectText(child.stderr, 4000);
  // SIGTERM lets the runner stop the CLI and the proxy it started before it exits.
  const timer = setTimeout(() => child.kill('SIGTERM'), options.timeoutMs);
  return new Promise((resolve, reject) => {
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const line = stdout().trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line) as ScenarioResult);
      } catch {
        reject(new Error(`run-scenario ended (${code ?? signal}) without a result: ${stderr().trim()}`));
      }
    });
  });
}
