import type { ImagePart, OpaquePart, Part, TextPart } from '../../core/transcript.js';
import { readSlice } from '../provider-data.js';

export const NAMESPACE = 'openaiChat';

/** How a chat message wrote its `content`: remembered only when it differs from the default. */
export type ContentShape = 'string' | 'array' | 'null' | 'absent';

/** Parts that `content` can hold. */
export type ContentPart = TextPart | ImagePart | OpaquePart;

/** Parts that live in `content` (a refusal kept in the `refusal` field does not). */
export function contentParts(parts: readonly Part[]): ContentPart[] {
  return parts.filter(
    (part): part is ContentPart =>
      (part.type === 'text' && readSlice(part, NAMESPACE).refusal !== 'field') ||
      part.type === 'image' ||
      part.type === 'opaque',
  );
}

/** The shape `toOpenAIChat` writes when nothing was remembered. */
export function defaultContentShape(content: readonly ContentPart[], hasToolCalls: boolean): ContentShape {
  if (content.length === 0) return hasToolCalls ? 'null' : 'string';
  const [only] = content;
  const plainText = only?.type === 'text' && readSlice(only, NAMESPACE).refusal === undefined;
  return content.length === 1 && plainText && !readSlice(only, NAMESPACE).extra ? 'string' : 'array';
}

/** Whether a remembered shape can still hold the (possibly edited) content. */
export function shapeFits(shape: unknown, content: readonly ContentPart[]): shape is ContentShape {
  switch (shape) {
    case 'array':
      return true;
    case 'string':
      return defaultContentShape(content, false) === 'string';
    case 'null':
    case 'absent':
      return content.length === 0;
    default:
      return false;
  }
}
