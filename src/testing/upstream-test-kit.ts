/** Helpers shared by the scripted upstream's own tests (test-only; excluded from the build). */

import { afterEach } from 'vitest';
import {
  type ScriptedUpstream,
  type ScriptedUpstreamOptions,
  startScriptedUpstream,
} from './scripted-upstream.js';

// biome-ignore lint/suspicious/noExplicitAny: wire JSON is asserted structurally; a loose type keeps that readable
export type Wire = any;

export async function readJson(response: Response | Promise<Response>): Promise<Wire> {
  return (await response).json();
}

export function post(
  server: ScriptedUpstream,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** A `start` function whose upstream is closed after each test. Call at the top of a test file. */
export function useScriptedUpstream(): (options: ScriptedUpstreamOptions) => Promise<ScriptedUpstream> {
  let upstream: ScriptedUpstream | undefined;
  afterEach(async () => {
    await upstream?.close();
    upstream = undefined;
  });
  return async (options) => {
    upstream = await startScriptedUpstream(options);
    return upstream;
  };
}

export const chatBody = {
  model: 'gpt-test',
  messages: [{ role: 'user', content: 'Say hello to the heap.' }],
};
export const anthropicBody = { model: 'claude-test', max_tokens: 64, messages: chatBody.messages };
