/**
 * The AI SDK middleware sees `LanguageModelV3Prompt`, the provider-facing form of the prompt,
 * while the adapter speaks the user-facing `ModelMessage`. The two differ only in shape: the
 * provider form has no string content and no `image` parts (images are `file` parts with an
 * image media type), and its data is bytes, base64 or a URL. The provider form is already a
 * valid `ModelMessage` list, so reading needs no conversion; this module writes the other way.
 */
import type {
  LanguageModelV3DataContent,
  LanguageModelV3FilePart,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
} from '@ai-sdk/provider';
import type { ModelDataContent, ModelFilePart, ModelImagePart, ModelMessage } from '../adapters/index.js';

/** `ModelMessage`s (as `toModelMessages` writes them) in the provider-facing prompt form. */
export function toLanguageModelPrompt(messages: readonly ModelMessage[]): LanguageModelV3Prompt {
  return messages.map(toLanguageModelMessage);
}

function toLanguageModelMessage(message: ModelMessage): LanguageModelV3Message {
  switch (message.role) {
    case 'system':
      return message as LanguageModelV3Message;
    case 'user':
    case 'assistant': {
      const content =
        typeof message.content === 'string'
          ? [{ type: 'text' as const, text: message.content }]
          : message.content.map((part) =>
              part.type === 'image' || part.type === 'file' ? toFilePart(part) : part,
            );
      return { ...message, content } as LanguageModelV3Message;
    }
    case 'tool':
      return message as LanguageModelV3Message;
  }
}

/** An `image` part becomes a `file` part; extras such as `originalUrl` ride along. */
function toFilePart(part: ModelImagePart | ModelFilePart): LanguageModelV3FilePart {
  if (part.type === 'file') return { ...part, data: toDataContent(part.data) } as LanguageModelV3FilePart;
  const { image, mediaType, ...rest } = part;
  return {
    ...rest,
    type: 'file',
    data: toDataContent(image),
    mediaType: mediaType ?? 'image/*',
  } as LanguageModelV3FilePart;
}

function toDataContent(data: ModelDataContent): LanguageModelV3DataContent {
  return data instanceof ArrayBuffer ? new Uint8Array(data) : data;
}
