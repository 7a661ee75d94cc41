/**
 * The blocks of one streamed round (Anthropic content blocks, Responses output items), each known
 * by its upstream index: sent on at once under the client's next index, or held back. A round
 * holds from its first tool call on, so that what it releases at its end keeps the order the
 * model wrote it in.
 */
import type { SseMessage } from './stream-merger.js';
import type { JsonObject } from './wire-dialect.js';

export interface RoundBlock {
  /** The block's index in the upstream's answer of this round. */
  upstreamIndex: number;
  /** The tool's name when the block is a tool call. */
  tool?: string;
  /** The block's index in the client's answer, once it has one. */
  clientIndex?: number;
  /** Held events, in order, each with its payload. */
  held?: Array<{ message: SseMessage; payload: JsonObject }>;
}

export interface RoundBlocks {
  /** A block starts: it gets a client index now, or is held (a tool call, or after one). */
  open(upstreamIndex: number, tool: string | undefined): RoundBlock;
  block(upstreamIndex: number): RoundBlock | undefined;
  /**
   * The held blocks that `keep` accepts, in upstream order, each given the client's next index;
   * the round starts afresh.
   */
  release(keep: (block: RoundBlock) => boolean): RoundBlock[];
}

/** `nextIndex` hands out the client's indexes, across rounds. */
export function createRoundBlocks(nextIndex: () => number): RoundBlocks {
  let blocks = new Map<number, RoundBlock>();
  let holding = false;
  return {
    open(upstreamIndex, tool) {
      holding ||= tool !== undefined;
      const block: RoundBlock = holding
        ? { upstreamIndex, held: [] }
        : { upstreamIndex, clientIndex: nextIndex() };
      if (tool !== undefined) block.tool = tool;
      blocks.set(upstreamIndex, block);
      return block;
    },
    block: (upstreamIndex) => blocks.get(upstreamIndex),
    release(keep) {
      const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
      const released = ordered.filter((block) => block.held !== undefined && keep(block));
      for (const block of released) block.clientIndex = nextIndex();
      blocks = new Map();
      holding = false;
      return released;
    },
  };
}
