/**
 * The exact payload of an object as the sidecar stores it, and its way back.
 */
import { BadInputError, parseJson } from './errors.js';
import { attachedText, isToolOutput, type Ledger, type LedgerObject, type TextRange } from './ledger.js';
import { objectText, spanText } from './render-replacement.js';
import {
  type Message,
  messageText,
  type TextPart,
  type ToolResultPart,
  TRANSCRIPT_SPEC_VERSION,
  textOfParts,
} from './transcript.js';

/** What a sidecar record's `payload` holds (as JSON text). */
export type ObjectPayload =
  | {
      specVersion: number;
      objectId: string;
      kind: 'function';
      messageIndex: number;
      partIndex: number;
      /**
       * The tool-result part exactly as it was in the transcript; or the text part of a user
       * message that a client attached a tool's output in (`clientAttachments`), or the output's
       * own text when it stands inside that part (at `range` of it).
       */
      part: ToolResultPart | TextPart;
      range?: TextRange;
      message?: never;
      /**
       * The assistant message that made the call, exactly as it was, so that an output pruned
       * with its shell is recoverable whole. Absent when the call is not in the transcript.
       */
      shell?: { messageIndex: number; message: Message };
    }
  | {
      specVersion: number;
      objectId: string;
      kind: 'function';
      messageIndex: number;
      /** An observation a text-protocol client sent: its user message exactly as it was. */
      message: Message;
      partIndex?: never;
      part?: never;
      /** The agent's message that wrote the command, exactly as it was. */
      shell?: { messageIndex: number; message: Message };
    }
  | {
      specVersion: number;
      objectId: string;
      kind: 'conversation' | 'system';
      /** The span's messages exactly as they were, starting at `start`. */
      start: number;
      messages: Message[];
    };

/** The payload of an object; for a span fold, of its span up to `spanEnd`. */
export function objectPayload(
  ledger: Ledger,
  object: LedgerObject,
  spanEnd = object.span.end,
): ObjectPayload {
  if (isToolOutput(object)) {
    const message = ledger.messages[object.messageIndex];
    const shell =
      object.callMessageIndex === undefined ? undefined : ledger.messages[object.callMessageIndex];
    const shellField = shell ? { shell: { messageIndex: object.callMessageIndex!, message: shell } } : {};
    if (message?.role === 'user' && object.partIndex === undefined) {
      return {
        specVersion: TRANSCRIPT_SPEC_VERSION,
        objectId: object.id,
        kind: 'function',
        messageIndex: object.messageIndex,
        message,
        ...shellField,
      };
    }
    const part = message?.parts[object.partIndex ?? 0];
    const attached = message?.role === 'user' && part?.type === 'text';
    if (part?.type !== 'tool-result' && !attached)
      throw new BadInputError(`${object.id}: its tool result is missing`);
    const { range } = object;
    return {
      specVersion: attached ? ATTACHED_OUTPUT_SPEC_VERSION : TRANSCRIPT_SPEC_VERSION,
      objectId: object.id,
      kind: 'function',
      messageIndex: object.messageIndex,
      partIndex: object.partIndex ?? 0,
      // An output inside a text part is stored as a text of its own: what a reader of version 3
      // expands is then the output, byte for byte.
      part: range ? { type: 'text', text: attachedText(part, range) } : part,
      ...(range ? { range } : {}),
      ...shellField,
    };
  }
  return {
    specVersion: TRANSCRIPT_SPEC_VERSION,
    objectId: object.id,
    kind: object.kind === 'system' ? 'system' : 'conversation',
    start: object.span.start,
    messages: ledger.messages.slice(object.span.start, spanEnd),
  };
}

/** The text to index for full-text search. */
export function payloadSearchText(ledger: Ledger, object: LedgerObject, spanEnd = object.span.end): string {
  return object.kind === 'conversation' ? spanText(ledger, object, spanEnd) : objectText(ledger, object);
}

/**
 * The version of the payload of a tool's output a client attached to a user message, whose `part`
 * is a text part: readers before it would take it for a tool result and misread it, so they
 * refuse it (and read every other payload, still written at `TRANSCRIPT_SPEC_VERSION`).
 */
export const ATTACHED_OUTPUT_SPEC_VERSION = 3;

/** Spec versions whose payloads read as the current one unchanged (version 2 only added a part type). */
const READABLE_SPEC_VERSIONS: ReadonlySet<unknown> = new Set([
  1,
  TRANSCRIPT_SPEC_VERSION,
  ATTACHED_OUTPUT_SPEC_VERSION,
]);

/** Read a stored payload back, checking its spec version. */
export function parseObjectPayload(payload: string, where: string): ObjectPayload {
  const value = parseJson(payload, where) as Partial<ObjectPayload>;
  if (!READABLE_SPEC_VERSIONS.has(value.specVersion)) {
    throw new BadInputError(
      `${where}: payload spec version ${String(value.specVersion)} is not one this version reads (${[...READABLE_SPEC_VERSIONS].join(', ')})`,
    );
  }
  return value as ObjectPayload;
}

/** The text the model sees when a payload is expanded back into the view. */
export function payloadText(payload: ObjectPayload): string {
  if (payload.kind === 'function') {
    if (payload.message) return textOfParts(payload.message.parts);
    if (payload.part.type === 'text') return payload.part.text;
    const content = payload.part.content;
    return typeof content === 'string' ? content : textOfParts(content);
  }
  return payload.messages.map((message) => `${message.role}: ${messageText(message)}`).join('\n\n');
}
