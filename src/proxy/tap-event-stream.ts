/**
 * Pass an event stream through chunk by chunk, unchanged and unbuffered, while reading its events
 * on the side (for usage numbers). Backpressure and cancellation go through to the source.
 */

/** Splits text into server-sent events and hands each event's data (and name, if any) to `onData`. */
export function createSseReader(onData: (data: string, event: string | undefined) => void): {
  push(text: string): void;
} {
  let pending = '';
  let data: string[] = [];
  let event: string | undefined;
  const line = (value: string) => {
    if (value === '') {
      if (data.length > 0) onData(data.join('\n'), event);
      data = [];
      event = undefined;
    } else if (value.startsWith('data:')) {
      data.push(value.slice(value.startsWith('data: ') ? 6 : 5));
    } else if (value.startsWith('event:')) {
      event = value.slice(value.startsWith('event: ') ? 7 : 6);
    }
  };
  return {
    push(text) {
      pending += text;
      const lines = pending.split(/\r\n|\r(?!$)|\n/);
      pending = lines.pop() ?? '';
      for (const value of lines) line(value);
    },
  };
}

export type StreamOutcome = 'complete' | 'failed' | 'cancelled';

export function tapEventStream(
  source: ReadableStream<Uint8Array>,
  onData: (data: string) => void,
  onEnd: (outcome: StreamOutcome) => void,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const decoder = new TextDecoder();
  const events = createSseReader((data) => {
    try {
      onData(data);
    } catch {
      // Reading usage must never break the client's stream.
    }
  });
  let ended = false;
  const end = (outcome: StreamOutcome) => {
    if (ended) return;
    ended = true;
    onEnd(outcome);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          events.push(`${decoder.decode()}\n\n`);
          end('complete');
          controller.close();
          return;
        }
        controller.enqueue(value);
        events.push(decoder.decode(value, { stream: true }));
      } catch (error) {
        end('failed');
        controller.error(error);
      }
    },
    async cancel(reason) {
      end('cancelled');
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}
