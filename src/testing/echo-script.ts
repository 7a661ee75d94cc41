/**
 * A ready-made script for examples and smoke tests: the scripted model answers with the text of
 * the latest user message, on every path, so a test can see what reached the upstream.
 */

import type { Script, ScriptedRequest } from './scripted-reply.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Text of a message's content: a string, or the text parts of a part list (any provider). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isRecord)
    .filter((part) => ['text', 'input_text'].includes(String(part.type)) && typeof part.text === 'string')
    .map((part) => part.text as string)
    .join('');
}

/** The latest user text of a Chat Completions, Responses or Messages request body. */
export function latestUserText(body: unknown): string {
  if (!isRecord(body)) return '';
  if (typeof body.input === 'string') return body.input;
  const turns = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
  for (const turn of [...turns].reverse()) {
    if (!isRecord(turn) || turn.role !== 'user') continue;
    const text = contentText(turn.content);
    if (text !== '') return text;
  }
  return '';
}

/** Answers `${prefix}${latest user text}`; the prefix defaults to `echo: `. */
export function createEchoScript(options: { prefix?: string } = {}): Script {
  const prefix = options.prefix ?? 'echo: ';
  return (request: ScriptedRequest) => ({ text: `${prefix}${latestUserText(request.body)}` });
}
