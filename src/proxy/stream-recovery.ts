/**
 * Transparent recovery of a streamed answer: the upstream's events go to the client through the
 * route's stream merger while they arrive; when a round ends calling the proxy's tools, the
 * proxy answers them and streams the next round into the same answer. The client reads one
 * well-formed stream. An upstream failure mid-answer ends it with the provider's error event; a
 * client that goes away aborts the upstream call in flight.
 */
import type { UpstreamAnswer } from './call-upstream.js';
import { encodeSse, type SseMessage, type StreamMerger } from './stream-merger.js';
import { createSseReader, type StreamOutcome } from './tap-event-stream.js';
import type { Recovery } from './transparent-recovery.js';
import {
  eventUsage,
  isJsonObject,
  type JsonObject,
  type TokenUsage,
  type WireDialect,
} from './wire-dialect.js';

export interface StreamRecoveryOptions {
  dialect: WireDialect;
  recovery: Recovery;
  merger: StreamMerger;
  /** The first round's event stream. */
  first: ReadableStream<Uint8Array>;
  /** One more round upstream; resolves once the answer's headers are in. */
  send(body: JsonObject, signal: AbortSignal): Promise<UpstreamAnswer>;
  /** The usage of each round's answer. */
  onUsage(usage: Partial<TokenUsage>): void;
  /** The client's stream ended (once). */
  onEnd(outcome: StreamOutcome): void;
}

function isEventStream(answer: UpstreamAnswer): boolean {
  return (answer.headers.get('content-type') ?? '').includes('text/event-stream');
}

/** The message of an upstream error body in either provider's format, or its status. */
async function refusalOf(answer: UpstreamAnswer): Promise<string> {
  const text = await answer.text().catch(() => '');
  try {
    const body: unknown = JSON.parse(text);
    const error = isJsonObject(body) && isJsonObject(body.error) ? body.error : undefined;
    if (typeof error?.message === 'string') return `upstream answered ${answer.status}: ${error.message}`;
  } catch {
    // Not JSON: the status says enough.
  }
  return `upstream answered ${answer.status} during transparent recovery`;
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

  async function* rounds(): AsyncGenerator<string> {
    let source = options.first;
    for (;;) {
      try {
        yield* streamRound(source);
      } catch (error) {
        if (abort.signal.aborted) return;
        yield encodeSse(merger.fail(`upstream stream broke off: ${messageOf(error)}`));
        return end('failed');
      }
      if (abort.signal.aborted) return;
      const round = merger.endRound();
      if (round.kind === 'failed') return end('failed');
      if (round.kind === 'cut') {
        yield encodeSse(merger.fail('upstream stream ended before the answer did'));
        return end('failed');
      }
      const next = await recovery.continueAfter(round.answer);
      if (abort.signal.aborted) return;
      if (next === undefined) {
        yield encodeSse(merger.finish());
        return end('complete');
      }
      const held = merger.continueRound();
      if (held.length > 0) yield encodeSse(held);
      let answer: UpstreamAnswer;
      try {
        answer = await options.send(next, abort.signal);
      } catch (error) {
        if (abort.signal.aborted) return;
        yield encodeSse(merger.fail(messageOf(error)));
        return end('failed');
      }
      if (!answer.ok || !isEventStream(answer) || answer.body === null) {
        yield encodeSse(merger.fail(await refusalOf(answer)));
        return end('failed');
      }
      source = answer.body;
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
