/**
 * Transparent recovery of a streamed answer: the upstream's events go to the client through the
 * route's stream merger while they arrive; when a round ends calling the proxy's tools, the
 * proxy answers them and streams the next round into the same answer. The client reads one
 * well-formed stream. An upstream failure mid-answer ends it with the provider's error event; a
 * client that goes away aborts the upstream call in flight.
 */
import { UpstreamError } from '../core/errors.js';
import { upstreamErrorBody } from './proxy-errors.js';
import { encodeSse, type SseMessage, type StreamFailure, type StreamMerger } from './stream-merger.js';
import { createSseReader, type StreamOutcome } from './tap-event-stream.js';
import type { Recovery } from './transparent-recovery.js';
import { eventUsage, type JsonObject, type TokenUsage, type WireDialect } from './wire-dialect.js';

/**
 * The upstream's answer to one more round: its event stream, or any other answer read whole
 * (`json`: its body parsed, if it was JSON not nested too deep to walk).
 */
export type RoundAnswer = { stream: ReadableStream<Uint8Array> } | { status: number; json: unknown };

export interface StreamRecoveryOptions {
  dialect: WireDialect;
  recovery: Recovery;
  merger: StreamMerger;
  /** The first round's event stream. */
  first: ReadableStream<Uint8Array>;
  /** One more round upstream: an answer that is no event stream is read whole, within the timeout. */
  send(body: JsonObject, signal: AbortSignal): Promise<RoundAnswer>;
  /** The usage of each round's answer. */
  onUsage(usage: Partial<TokenUsage>): void;
  /**
   * The proxy's own failure ends the answer (the upstream unreachable, out of time, its stream
   * broken off): logged and counted, and returned as the error the client reads.
   */
  onFailure(error: unknown): StreamFailure;
  /** The client's stream ended (once). */
  onEnd(outcome: StreamOutcome): void;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function streamRecovery(options: StreamRecoveryOptions): ReadableStream<Uint8Array> {
  const { dialect, merger, recovery } = options;
  const abort = new AbortController();
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let ended = false;
  const end = (outcome: StreamOutcome) => {
    if (ended) return;
    ended = true;
    options.onEnd(outcome);
  };

  /** One round's events through the merger, as client text; its usage is reported at its end. */
  async function* streamRound(source: ReadableStream<Uint8Array>): AsyncGenerator<string> {
    reader = source.getReader();
    const decoder = new TextDecoder();
    const events: SseMessage[] = [];
    const usage: Partial<TokenUsage> = {};
    const sse = createSseReader((data, event) => {
      events.push(event === undefined ? { data } : { event, data });
      Object.assign(usage, eventUsage(dialect, data));
    });
    try {
      for (;;) {
        const { done, value } = await reader.read();
        sse.push(done ? `${decoder.decode()}\n\n` : decoder.decode(value, { stream: true }));
        const out = events.splice(0).flatMap((event) => merger.push(event));
        if (out.length > 0) yield encodeSse(out);
        if (done) return;
      }
    } finally {
      options.onUsage(usage);
    }
  }

  /** The client's stream ends with the proxy's own failure. */
  const failure = (error: unknown) => encodeSse(merger.fail(options.onFailure(error)));

  async function* rounds(): AsyncGenerator<string> {
    let source = options.first;
    for (;;) {
      try {
        yield* streamRound(source);
      } catch (error) {
        if (abort.signal.aborted) return;
        yield failure(new UpstreamError(`upstream stream broke off: ${messageOf(error)}`, { cause: error }));
        return end('failed');
      }
      if (abort.signal.aborted) return;
      const round = merger.endRound();
      if (round.kind === 'failed') return end('failed');
      if (round.kind === 'cut') {
        yield failure(new UpstreamError('upstream stream ended before the answer did'));
        return end('failed');
      }
      let answer: RoundAnswer;
      try {
        const next = await recovery.continueAfter(round.answer);
        if (abort.signal.aborted) return;
        if (next === undefined) {
          yield encodeSse(merger.finish());
          return end('complete');
        }
        const held = merger.continueRound();
        if (held.length > 0) yield encodeSse(held);
        answer = await options.send(next, abort.signal);
      } catch (error) {
        if (abort.signal.aborted) return;
        yield failure(error);
        return end('failed');
      }
      if ('status' in answer) {
        // The upstream refused the round: its own error ends the answer, as it would have ended
        // a request of the client's own; an answer of another kind is the proxy's failure.
        const refused = answer.status < 200 || answer.status > 299;
        yield refused
          ? encodeSse(
              merger.fail({
                status: answer.status,
                body: upstreamErrorBody(dialect.provider, answer.status, answer.json),
              }),
            )
          : failure(new UpstreamError(`upstream answered ${answer.status} without an event stream`));
        return end('failed');
      }
      source = answer.stream;
    }
  }

  const encoder = new TextEncoder();
  const iterator = rounds();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await iterator.next();
        if (done) {
          end(abort.signal.aborted ? 'cancelled' : 'complete');
          controller.close();
        } else {
          controller.enqueue(encoder.encode(value));
        }
      } catch (error) {
        end('failed');
        controller.error(error);
      }
    },
    async cancel(reason) {
      abort.abort(reason);
      end('cancelled');
      await reader?.cancel(reason).catch(() => undefined);
      await iterator.return(undefined).catch(() => undefined);
    },
  });
}
