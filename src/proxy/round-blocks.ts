/**
 * The blocks of one streamed round (Anthropic content blocks, Responses output items), each known
 * by its upstream index: sent on at once under the client's next index, or held back. A round
 * holds from its first tool call on, so that what it releases at its end keeps the order the
 * model wrote it in. A leading block (a Responses reasoning item, which the API wants passed back
 * with the item that followed it) waits for the next block: before a call it shares the call's
 * fate, before anything else it goes out.
 */
import type { SseMessage } from './stream-merger.js';
import type { JsonObject } from './wire-dialect.js';

export interface RoundBlock {
  /** The block's index in the upstream's answer of this round. */
  upstreamIndex: number;
  /** The tool's name when the block is a tool call. */
  tool?: string;
  /** A leading block's: the tool of the call that came right after it. */
  leadsTo?: string;
  /** The block's index in the client's answer, once it has one. */
  clientIndex?: number;
  /** Held events, in order, each with its payload. */
  held?: Array<{ message: SseMessage; payload: JsonObject }>;
}

export interface RoundBlocks {
  /**
   * A block starts: it gets a client index now, or is held (a tool call, after one, or a leading
   * block). Returns it, and the leading block before it when that goes out now (under the client
   * index before the new block's), with the events it held, to send first.
   */
  open(
    upstreamIndex: number,
    tool: string | undefined,
    leading?: boolean,
  ): { block: RoundBlock; released?: RoundBlock };
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
  let waiting: RoundBlock | undefined;
  return {
    open(upstreamIndex, tool, leading = false) {
      let released: RoundBlock | undefined;
      if (waiting !== undefined && tool !== undefined) waiting.leadsTo = tool;
      else if (waiting !== undefined) {
        waiting.clientIndex = nextIndex();
        released = { ...waiting };
        // Its later events go straight out, and the round's release does not send it again.
        delete waiting.held;
      }
      waiting = undefined;
      holding ||= tool !== undefined;
      const block: RoundBlock =
        holding || leading ? { upstreamIndex, held: [] } : { upstreamIndex, clientIndex: nextIndex() };
      if (tool !== undefined) block.tool = tool;
      if (leading && !holding) waiting = block;
      blocks.set(upstreamIndex, block);
      return released === undefined ? { block } : { block, released };
    },
    block: (upstreamIndex) => blocks.get(upstreamIndex),
    release(keep) {
      const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
      const released = ordered.filter((block) => block.held !== undefined && keep(block));
      for (const block of released) block.clientIndex = nextIndex();
      blocks = new Map();
      holding = false;
      waiting = undefined;
      return released;
    },
  };
}

/** The call a block is, or leads to. */
export function callOf(block: RoundBlock): string | undefined {
  return block.tool ?? block.leadsTo;
}
