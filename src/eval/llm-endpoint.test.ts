import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamError } from '../core/errors.js';
import type { LlmClient } from '../llm/llm-types.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { createEndpointClient, ENDPOINT_FAILURE_LIMIT, withFailureLimit } from './llm-endpoint.js';

let upstream: ScriptedUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

const ask = (client: LlmClient) =>
  client.complete({ messages: [{ role: 'user', content: 'hi' }] }).then(
    (response) => response.text,
    (error: unknown) => error,
  );

describe('createEndpointClient', () => {
  it('reads the API key from the environment variable the endpoint names', async () => {
    upstream = await startScriptedUpstream({ script: () => ({ text: 'ok' }), apiKey: 'sk-scripted' });
    const endpoint = {
      provider: 'openai' as const,
      baseUrl: `${upstream.url}/v1`,
      model: 'scripted-model',
      keyEnv: 'SELFGC_TEST_KEY',
    };
    expect(await ask(createEndpointClient(endpoint, { SELFGC_TEST_KEY: 'sk-scripted' }))).toBe('ok');
    expect(upstream.requests[0]?.headers.authorization).toBe('Bearer sk-scripted');
    const refused = await ask(createEndpointClient(endpoint, {}));
    expect(refused).toBeInstanceOf(UpstreamError);
    expect((refused as UpstreamError).status).toBe(401);
  });
});

describe('withFailureLimit', () => {
  it(`stops asking after ${ENDPOINT_FAILURE_LIMIT} failures in a row, a success resetting the count`, async () => {
    const outcomes = ['fail', 'fail', 'ok', 'fail', 'fail', 'fail', 'ok'];
    let calls = 0;
    const inner: LlmClient = {
      provider: 'openai',
      model: 'm',
      async complete() {
        const outcome = outcomes[calls++];
        if (outcome === 'fail') throw new UpstreamError(`call ${calls} failed`);
        return {
          text: 'ok',
          raw: {},
          usage: { inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, cacheWriteInputTokens: 0 },
        };
      },
    };
    const client = withFailureLimit(inner, 3);
    const results = [];
    for (let index = 0; index < 8; index += 1) {
      const result = await ask(client);
      results.push(typeof result === 'string' ? result : (result as Error).message);
    }
    expect(results).toEqual([
      'call 1 failed',
      'call 2 failed',
      'ok',
      'call 4 failed',
      'call 5 failed',
      'call 6 failed',
      'openai endpoint not asked: its last 3 calls failed (last: call 6 failed)',
      'openai endpoint not asked: its last 3 calls failed (last: call 6 failed)',
    ]);
    expect(calls).toBe(6);
    expect(client.model).toBe('m');
  });
});
