/**
 * The load script's head-of-line phase: small sessions through the proxy, first alone, then
 * while one big body (31 MB by default, under the proxy's 32 MiB body limit) is in flight, sent
 * again each time it is answered. The small requests' p99 beside the big body, against their p99
 * alone in the same run, shows whether one huge request stalls everyone else.
 */
import { authHeaders, conversationBody, hugeChatBody } from '../src/proxy/testing/agent-conversation.js';
import { type LatencySummary, summarize } from './proxy-load-stats.js';

/** Marks a request the scripted upstream answers at once (no model time). */
export const NO_MODEL_TIME_HEADER = 'x-bench-no-model-time';

export interface BigBodyOptions {
  proxyUrl: string;
  /** Small sessions at once, and the turns each sends one after the other. */
  sessions: number;
  turns: number;
  /** A session's pause between turns (the model's time, which this phase's upstream does not take). */
  pauseMs: number;
  megabytes: number;
  /** The phase stops sending the big body after this many (a bound, not a target). */
  maxBigBodies?: number;
}

export interface BigBodyResult {
  alone: LatencySummary;
  beside: LatencySummary;
  /** The big bodies answered during the phase, with their status and governance header. */
  big: Array<{ ms: number; status: number; governance: string | null; bytes: number }>;
  /** Small requests not answered 200. */
  failures: number;
}

async function post(proxyUrl: string, body: string | Uint8Array, apiKey: string, session: string) {
  const started = performance.now();
  const response = await fetch(`${proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...authHeaders('chat', apiKey), 'x-selfgc-session': session, [NO_MODEL_TIME_HEADER]: '1' },
    body,
  });
  await response.text();
  return {
    ms: performance.now() - started,
    status: response.status,
    governance: response.headers.get('x-selfgc-governance'),
  };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function smallSessions(options: BigBodyOptions, label: string) {
  const times: number[] = [];
  let failures = 0;
  await Promise.all(
    Array.from({ length: options.sessions }, async (_, index) => {
      // Sessions start spread over one pause, and pause between turns, as agents do.
      await pause((index * options.pauseMs) / options.sessions);
      for (let turn = 0; turn < options.turns; turn += 1) {
        if (turn > 0) await pause(options.pauseMs);
        const body = JSON.stringify(
          conversationBody('chat', { turns: 6 + turn, marker: `${label}-${index}` }),
        );
        const answer = await post(options.proxyUrl, body, `sk-${label}-${index % 10}`, `${label}-${index}`);
        if (answer.status !== 200) failures += 1;
        times.push(answer.ms);
      }
    }),
  );
  return { times, failures };
}

export async function runBigBodyPhase(options: BigBodyOptions): Promise<BigBodyResult> {
  const alone = await smallSessions(options, 'alone');
  // Encoded once: this process also sends the small sessions, and must not stall them encoding it.
  const body = new TextEncoder().encode(hugeChatBody(options.megabytes, 'big-body'));
  const big: BigBodyResult['big'] = [];
  let done = false;
  let sent = 0;
  const bigLoop = (async () => {
    while (!done && sent < (options.maxBigBodies ?? 50)) {
      sent += 1;
      big.push({
        ...(await post(options.proxyUrl, body, 'sk-big-body', 'big-body')),
        bytes: body.byteLength,
      });
    }
  })();
  // The small sessions start once the big body is on its way.
  await pause(100);
  const beside = await smallSessions(options, 'beside').finally(() => {
    done = true;
  });
  await bigLoop;
  return {
    alone: summarize(alone.times),
    beside: summarize(beside.times),
    big,
    failures: alone.failures + beside.failures,
  };
}
