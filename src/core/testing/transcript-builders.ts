/**
 * Small constructors for canonical transcripts in tests: one line per message, so a test
 * reads like the session it describes.
 */
import type { Message, ToolCallPart, ToolResultPart } from '../transcript.js';

export function systemMessage(value: string): Message {
  return { role: 'system', parts: [{ type: 'text', text: value }] };
}

export function userMessage(value: string): Message {
  return { role: 'user', parts: [{ type: 'text', text: value }] };
}

export function assistantMessage(value: string): Message {
  return { role: 'assistant', parts: [{ type: 'text', text: value }] };
}

/** A tool call; object arguments are serialised as the model would have written them. */
export function toolCall(id: string, name: string, args: Record<string, unknown> | string): ToolCallPart {
  return { type: 'tool-call', id, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
}

/** An assistant turn that calls tools, with optional text before the calls. */
export function assistantCalls(calls: ToolCallPart[], value?: string): Message {
  return {
    role: 'assistant',
    parts: [...(value === undefined ? [] : [{ type: 'text' as const, text: value }]), ...calls],
  };
}

export function toolResult(
  callId: string,
  name: string,
  content: string,
  options: { isError?: boolean } = {},
): ToolResultPart {
  return { type: 'tool-result', callId, name, content, ...(options.isError ? { isError: true } : {}) };
}

/** A tool message holding the given results. */
export function toolMessage(...results: ToolResultPart[]): Message {
  return { role: 'tool', parts: results };
}

/** One tool round: the assistant calls `name` with `args`, the tool answers `output`. */
export function toolRound(
  callId: string,
  name: string,
  args: Record<string, unknown>,
  output: string,
  options: { isError?: boolean; text?: string } = {},
): Message[] {
  return [
    assistantCalls([toolCall(callId, name, args)], options.text),
    toolMessage(toolResult(callId, name, output, options.isError ? { isError: true } : {})),
  ];
}

/** `count` lines of regular, maskable output (a long file listing or log). */
export function longOutput(label: string, count: number): string {
  return Array.from(
    { length: count },
    (_, index) => `${label} line ${index + 1}: value=${index * 7} status ok`,
  ).join('\n');
}
