import { describe, expect, it } from 'vitest';
import { approximateTokenCounter } from '../src/core/tokens.js';
import { checkCacheBreakpoints, checkToolPairs, checkWindow, measureRequest } from './check-request.js';
import { latestResults, readWireRequest } from './read-wire-request.js';

const use = (id: string) => ({ type: 'tool_use', id, name: 'Read', input: { file_path: '/a' } });
const result = (id: string, content: unknown = 'text') => ({ type: 'tool_result', tool_use_id: id, content });

function messages(list: unknown[], extra: Record<string, unknown> = {}) {
  return readWireRequest('messages', { model: 'claude', max_tokens: 100, messages: list, ...extra });
}

describe('checkToolPairs, Anthropic Messages', () => {
  it('accepts whole pairs and a last turn still waiting for its results', () => {
    const request = messages([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [use('a'), use('b')] },
      { role: 'user', content: [result('a'), result('b'), { type: 'text', text: 'more' }] },
      { role: 'assistant', content: [use('c')] },
    ]);
    expect(checkToolPairs(request)).toEqual([]);
  });

  it('finds an orphan result and a call whose result is missing', () => {
    const request = messages([
      { role: 'user', content: [result('ghost')] },
      { role: 'assistant', content: [use('a'), use('b')] },
      { role: 'user', content: [result('a')] },
    ]);
    expect(checkToolPairs(request)).toEqual([
      'turn 0 (user): tool result ghost answers no call of the turn before it',
      'turn 1 (assistant): tool call b (Read) has no result in the next turn',
    ]);
  });

  it('finds results that do not come right after their call', () => {
    const request = messages([
      { role: 'assistant', content: [use('a')] },
      { role: 'system', content: 'a reminder' },
      { role: 'user', content: [result('a')] },
    ]);
    expect(checkToolPairs(request)).toHaveLength(2);
  });
});

describe('checkToolPairs, Chat Completions', () => {
  const call = (id: string) => ({ id, type: 'function', function: { name: 'bash', arguments: '{}' } });
  const chat = (list: unknown[]) => readWireRequest('chat', { model: 'm', messages: list });

  it('accepts tool messages right after their assistant message', () => {
    const request = chat([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
      { role: 'tool', tool_call_id: 'a', content: 'x' },
      { role: 'tool', tool_call_id: 'b', content: 'y' },
      { role: 'assistant', content: null, tool_calls: [call('c')] },
    ]);
    expect(checkToolPairs(request)).toEqual([]);
  });

  it('finds a tool message without its call and calls left unanswered', () => {
    const request = chat([
      { role: 'tool', tool_call_id: 'ghost', content: 'x' },
      { role: 'assistant', content: null, tool_calls: [call('a')] },
      { role: 'user', content: 'what now' },
      { role: 'assistant', content: null, tool_calls: [call('b'), call('c')] },
      { role: 'tool', tool_call_id: 'b', content: 'y' },
    ]);
    expect(checkToolPairs(request)).toEqual([
      'turn 0 (tool): tool result ghost answers no call of the assistant turn before it',
      'turn 1 (assistant): tool call a (bash) has no result before turn 2',
      'turn 3 (assistant): tool call c (bash) has no result',
    ]);
  });
});

describe('checkToolPairs, Responses', () => {
  const responses = (input: unknown[]) => readWireRequest('responses', { model: 'm', input });
  const call = (id: string) => ({
    type: 'function_call',
    call_id: id,
    name: 'exec_command',
    arguments: '{}',
  });
  const output = (id: string) => ({ type: 'function_call_output', call_id: id, output: 'ok' });

  it('accepts calls with later outputs and trailing calls', () => {
    const request = responses([
      { type: 'message', role: 'user', content: 'go' },
      call('a'),
      output('a'),
      { type: 'reasoning', summary: [] },
      call('b'),
    ]);
    expect(checkToolPairs(request)).toEqual([]);
  });

  it('finds an output before its call and a call that never got one', () => {
    const request = responses([
      output('a'),
      call('a'),
      call('b'),
      { type: 'message', role: 'user', content: 'hm' },
    ]);
    expect(checkToolPairs(request)).toEqual([
      'turn 0 (tool): tool result a answers no earlier call',
      'turn 2 (assistant): tool call b has no result',
    ]);
  });
});

describe('checkCacheBreakpoints', () => {
  const mark = { cache_control: { type: 'ephemeral' } };

  it('accepts four breakpoints and refuses a fifth, wherever they are', () => {
    const body = (extra: unknown[]) => ({
      model: 'claude',
      system: [{ type: 'text', text: 's', ...mark }],
      tools: [{ name: 't', input_schema: {}, ...mark }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'u', ...mark }, ...extra] }],
    });
    const four = readWireRequest('messages', body([{ type: 'text', text: 'v', ...mark }]));
    expect(checkCacheBreakpoints(four)).toEqual([]);
    const five = readWireRequest(
      'messages',
      body([result('x', [{ type: 'text', text: 'r', ...mark }]), { type: 'text', text: 'w', ...mark }]),
    );
    expect(checkCacheBreakpoints(five)).toEqual(['5 cache_control breakpoints (at most 4)']);
  });
});

describe('checkWindow', () => {
  it('counts system, turns, tools and the output reserve', () => {
    const request = messages([{ role: 'user', content: 'x'.repeat(400) }], {
      system: 'y'.repeat(40),
      tools: [{ name: 'Read', input_schema: { type: 'object' } }],
    });
    const size = measureRequest(request, approximateTokenCounter);
    expect(size).toMatchObject({ system: 10, messages: 104, reserve: 100 });
    expect(size.tools).toBeGreaterThan(0);
    expect(checkWindow(request, approximateTokenCounter, size.total)).toEqual([]);
    expect(checkWindow(request, approximateTokenCounter, size.total - 1)).toEqual([
      `${size.total} tokens (system 10, messages 104, tools ${size.tools}, output reserve 100) over the window of ${size.total - 1}`,
    ]);
  });
});

describe('latestResults', () => {
  it('reads the results after the last model turn, past a system message', () => {
    const request = messages([
      { role: 'assistant', content: [use('a')] },
      { role: 'user', content: [result('a', [{ type: 'text', text: 'seen' }])] },
      { role: 'system', content: [{ type: 'text', text: 'reminder' }] },
    ]);
    expect(latestResults(request)).toEqual([{ id: 'a', text: 'seen' }]);
  });
});
