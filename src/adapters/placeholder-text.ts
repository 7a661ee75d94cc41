import { type ImagePart, type Part, partText, type TextPart, type Warning } from '../core/transcript.js';

/** Reports a lossy conversion of the message being converted; the caller adds its index. */
export type Emit = (warning: Omit<Warning, 'messageIndex'>) => void;

/**
 * A part the target cannot hold, said out loud as text, with an `unsupported-part` warning.
 * `target` finishes the warning's "cannot be sent here …" (e.g. `to Anthropic`); `inlineImage`
 * names an image that is not a URL. Another provider's opaque block keeps its text, or says
 * which kind of block was left out.
 */
export function placeholderText(
  part: Part,
  emit: Emit,
  target: string,
  inlineImage: (part: ImagePart) => string = () => 'inline',
): TextPart {
  const what = part.type === 'opaque' ? `${part.provider} ${part.kind}` : part.type;
  emit({
    code: 'unsupported-part',
    message: `a ${what} part cannot be sent here ${target}; kept as text`,
  });
  if (part.type === 'opaque')
    return { type: 'text', text: part.text === '' ? `[${part.kind} omitted]` : part.text };
  if (part.type === 'image')
    return { type: 'text', text: `[image omitted: ${part.source === 'url' ? part.ref : inlineImage(part)}]` };
  return { type: 'text', text: partText(part) };
}
