import { type ImagePart, type Part, partText, type TextPart, type Warning } from '../core/transcript.js';

/** Reports a lossy conversion of the message being converted; the caller adds its index. */
export type Emit = (warning: Omit<Warning, 'messageIndex'>) => void;

/**
 * A part the target cannot hold, said out loud as text, with an `unsupported-part` warning.
 * `target` finishes the warning's "cannot be sent here …" (e.g. `to Anthropic`); `inlineImage`
 * names an image that is not a URL.
 */
export function placeholderText(
  part: Part,
  emit: Emit,
  target: string,
  inlineImage: (part: ImagePart) => string = () => 'inline',
): TextPart {
  emit({
    code: 'unsupported-part',
    message: `a ${part.type} part cannot be sent here ${target}; kept as text`,
  });
  if (part.type === 'image')
    return { type: 'text', text: `[image omitted: ${part.source === 'url' ? part.ref : inlineImage(part)}]` };
  return { type: 'text', text: partText(part) };
}
