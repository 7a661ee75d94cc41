/**
 * The blocks of one streamed round (Anthropic content blocks, Responses output items), each known
 * by its upstream index: sent on at once under the client's next index, or held back. A round
 * holds from its first tool call on, so that what it releases at its end keeps the order the
 * model wrote it in. Leading blocks (Responses reasoning, which the API wants passed back with
 * the item that followed it) wait for the next block that is not one: before a call they are held
 * with it, before anything else they go out ahead of it.
 */
import type { SseMessage } from './stream-merger.js';
import type { JsonObject } from './wire-dialect.js';

/** One event a block holds, with its payload. */
export interface HeldEvent {
  message: SseMessage;
  payload: JsonObject;
}

export interface RoundBlock {
  /** The block's index in the upstream's answer of this round. */
  upstreamIndex: number;
  /** The tool's name when the block is a tool call. */
  tool?: string;
  /** A leading block: it waits for what follows it. */
  leading?: true;
  /** The block's index in the client's answer, once it has one. */
  clientIndex?: number;
  /** Held events, in order. */
  held?: HeldEvent[];
}

export interface RoundBlocks {
  /**
   * A block starts: it gets a client index now, or is held (a tool call, after one, or a leading
   * block). Returns it, and the leading blocks that go out now, ahead of it (each under its
   * client index, with the events it held, to send first).
   */
  open(
    upstreamIndex: number,
    tool: string | undefined,
    leading?: boolean,
  ): { block: RoundBlock; released: Array<{ block: RoundBlock; held: HeldEvent[] }> };
  block(upstreamIndex: number): RoundBlock | undefined;
  /**
   * The held blocks `select` keeps of those held (given in upstream order), each given the
   * client's next index; the round starts afresh.
   */
  release(select: (held: readonly RoundBlock[]) => readonly RoundBlock[]): RoundBlock[];
}

/** `nextIndex` hands out the client's indexes, across rounds. */
export function createRoundBlocks(nextIndex: () => number): RoundBlocks {
  let blocks = new Map<number, RoundBlock>();
  let holding = false;
  let waiting: RoundBlock[] = [];
  return {
    open(upstreamIndex, tool, leading = false) {
      const released: Array<{ block: RoundBlock; held: HeldEvent[] }> = [];
      if (!leading) {
        // Before a call, they stay held with it; before anything else, they go out now.
        if (tool === undefined) {
          for (const block of waiting) {
            block.clientIndex = nextIndex();
            released.push({ block, held: block.held ?? [] });
            // Its later events go straight out, and the round's release does not send it again.
            delete block.held;
          }
        }
        waiting = [];
      }
      holding ||= tool !== undefined;
      const block: RoundBlock =
        holding || leading ? { upstreamIndex, held: [] } : { upstreamIndex, clientIndex: nextIndex() };
      if (tool !== undefined) block.tool = tool;
      if (leading) {
        block.leading = true;
        if (!holding) waiting.push(block);
      }
      blocks.set(upstreamIndex, block);
      return { block, released };
    },
    block: (upstreamIndex) => blocks.get(upstreamIndex),
    release(select) {
      const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
      const released = select(ordered.filter((block) => block.held !== undefined));
      for (const block of released) block.clientIndex = nextIndex();
      blocks = new Map();
      holding = false;
      waiting = [];
      return [...released];
    },
  };
}
