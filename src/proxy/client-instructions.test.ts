import { describe, expect, it } from 'vitest';
import { fromOpenAIResponses } from '../adapters/openai-responses/convert-from-openai-responses.js';
import type { ResponseInputItem } from '../adapters/openai-responses/openai-responses-api.js';
import { createPinRule } from '../core/governor/pins.js';
import { indexTranscript } from '../core/ledger.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { codexRequest } from './testing/client-requests.js';

describe("Codex CLI's request as the governor reads it", () => {
  it('pins the environment block it sends first as instructions, and the prompt as the task goal', () => {
    const request = codexRequest({ thread: 'thread-a' }, 'Fix the flaky parser test');
    const input = (request.body as { input: ResponseInputItem[] }).input;
    const { messages } = fromOpenAIResponses(input);
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    expect(ledger.objects.map((object) => [object.id, object.pinReason])).toEqual([
      ['conversation:user:1', 'instructions the client sent as a user message'],
      ['conversation:user:2', 'first user request (task goal)'],
    ]);
  });
});
