/**
 * Anthropic Messages streams merged into one message: one `message_start`, the content blocks of
 * every round renumbered in the order the client receives them, and the last round's
 * `message_delta` and `message_stop`. The SDK's `MessageStream` appends a block at each
 * `content_block_start` and addresses deltas by `index`, so indexes must count the blocks sent.
 */
import { createRoundBlocks, type RoundBlock } from './round-blocks.js';
import {
  eventOf,
  payloadOf,
  type SseMessage,
  type StreamMerger,
  type StreamMergerOptions,
  UNFINISHED_TURN_NOTE,
} from './stream-merger.js';
import { isJsonObject, type JsonObject, numberOf } from './wire-dialect.js';

/** A content block as it is assembled from its deltas. */
type Assembled = JsonObject & { json?: string };

function addDelta(block: Assembled, delta: unknown): void {
  if (!isJsonObject(delta)) return;
  const append = (field: string, value: unknown) => {
    if (typeof value === 'string')
      block[field] = `${typeof block[field] === 'string' ? block[field] : ''}${value}`;
  };
  if (delta.type === 'text_delta') append('text', delta.text);
  else if (delta.type === 'thinking_delta') append('thinking', delta.thinking);
  else if (delta.type === 'input_json_delta') append('json', delta.partial_json);
  else if (delta.type === 'signature_delta') block.signature = delta.signature;
  else if (delta.type === 'citations_delta') {
    block.citations = [...(Array.isArray(block.citations) ? block.citations : []), delta.citation];
  } else if (delta.type === 'compaction_delta') {
    // A server compaction's summary: the delta carries the block's whole value.
    block.content = delta.content;
    if ('encrypted_content' in delta) block.encrypted_content = delta.encrypted_content;
  }
}

function parseInput(json: string | undefined, fallback: unknown): unknown {
  if (json === undefined || json === '') return fallback ?? {};
  try {
    return JSON.parse(json);
  } catch {
    return fallback ?? {};
  }
}

/** The block as it goes back upstream (empty text blocks are refused there, so they leave). */
function finishedBlock({ json, ...block }: Assembled): JsonObject | undefined {
  // Every call streams its input as JSON text: a client's, a server tool's, an MCP server's.
  if (json !== undefined || block.type === 'tool_use' || block.type === 'server_tool_use') {
    return { ...block, input: parseInput(json, block.input) };
  }
  if (block.type === 'text') {
    if (typeof block.text !== 'string' || block.text === '') return undefined;
    const { citations, ...text } = block;
    return Array.isArray(citations) && citations.length > 0 ? { ...text, citations } : text;
  }
  return block;
}

/** A text block holding the note, at client index `index`. */
function noteBlock(index: number): SseMessage[] {
  const event = (payload: JsonObject): SseMessage => ({
    event: String(payload.type),
    data: JSON.stringify(payload),
  });
  return [
    event({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }),
    event({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: UNFINISHED_TURN_NOTE } }),
    event({ type: 'content_block_stop', index }),
  ];
}

export function mergeAnthropicStreams(options: StreamMergerOptions): StreamMerger {
  let started = false;
  let sentBlocks = 0;
  const blocks = createRoundBlocks(() => sentBlocks++);
  let content = new Map<number, Assembled>();
  let closing: { message: SseMessage; payload: JsonObject } | undefined;
  let stopped = false;
  let failed = false;

  /** The type of the last block the client got: its message may not end in thinking. */
  let lastSent: unknown;
  /** Whether a round went on upstream: the proxy took its calls out. */
  let recovered = false;
  const indexed = (message: SseMessage, payload: JsonObject, index: number): SseMessage => {
    if (payload.type === 'content_block_start' && isJsonObject(payload.content_block))
      lastSent = payload.content_block.type;
    return payload.index === index ? message : eventOf(message, { ...payload, index });
  };

  const route = (block: RoundBlock | undefined, message: SseMessage, payload: JsonObject) => {
    if (block === undefined) return [];
    if (block.held !== undefined) {
      block.held.push({ message, payload });
      return [];
    }
    return [indexed(message, payload, block.clientIndex ?? 0)];
  };

  const released = (kept: RoundBlock[]) =>
    kept.flatMap((block) =>
      (block.held ?? []).map(({ message, payload }) => indexed(message, payload, block.clientIndex ?? 0)),
    );

  const startRound = () => {
    content = new Map();
    closing = undefined;
    stopped = false;
  };

  return {
    push(message) {
      const payload = payloadOf(message);
      if (payload === undefined) return [message];
      const index = numberOf(payload.index) ?? -1;
      switch (payload.type) {
        case 'message_start':
          if (started) return [];
          started = true;
          return [message];
        case 'content_block_start': {
          const start = isJsonObject(payload.content_block) ? payload.content_block : {};
          content.set(index, { ...start });
          const tool = start.type === 'tool_use' && typeof start.name === 'string' ? start.name : undefined;
          return route(blocks.open(index, tool).block, message, payload);
        }
        case 'content_block_delta': {
          const block = content.get(index);
          if (block !== undefined) addDelta(block, payload.delta);
          return route(blocks.block(index), message, payload);
        }
        case 'content_block_stop':
          return route(blocks.block(index), message, payload);
        case 'message_delta':
          closing = { message, payload };
          return [];
        case 'message_stop':
          stopped = true;
          return [];
        case 'error':
          failed = true;
          return [message];
        default:
          // `ping`, and events this proxy does not know yet.
          return [message];
      }
    },
    endRound() {
      if (failed) return { kind: 'failed' };
      if (!stopped) return { kind: 'cut' };
      const ordered = [...content.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
      const delta = isJsonObject(closing?.payload.delta) ? closing.payload.delta : {};
      return {
        kind: 'answered',
        answer: {
          type: 'message',
          role: 'assistant',
          content: ordered.flatMap((block) => finishedBlock(block) ?? []),
          stop_reason: delta.stop_reason ?? null,
        },
      };
    },
    continueRound() {
      const events = released(blocks.release((held) => held.filter((block) => block.tool === undefined)));
      startRound();
      recovered = true;
      return events;
    },
    finish() {
      let tookCalls = recovered;
      const kept = blocks.release((held) => {
        const own = held.filter((block) => block.tool === undefined || !options.isInternal(block.tool));
        tookCalls ||= own.length < held.length;
        return own;
      });
      const events = released(kept);
      const thinkingLast = lastSent === 'thinking' || lastSent === 'redacted_thinking';
      // Only where the proxy took calls out, in this round or an earlier one: an answer of the
      // model's own stays as it came.
      if (tookCalls && (thinkingLast || lastSent === undefined)) events.push(...noteBlock(sentBlocks++));
      if (closing !== undefined) {
        const delta = isJsonObject(closing.payload.delta) ? closing.payload.delta : {};
        const callsLeft = kept.some((block) => block.tool !== undefined);
        events.push(
          delta.stop_reason === 'tool_use' && !callsLeft
            ? eventOf(closing.message, { ...closing.payload, delta: { ...delta, stop_reason: 'end_turn' } })
            : closing.message,
        );
      }
      events.push({ event: 'message_stop', data: JSON.stringify({ type: 'message_stop' }) });
      startRound();
      return events;
    },
    fail({ body }) {
      return [{ event: 'error', data: JSON.stringify(body) }];
    },
  };
}
