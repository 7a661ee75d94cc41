import { describe, expect, it } from 'vitest';
import { createSseReader, tapEventStream } from './tap-event-stream.js';
import { streamOf } from './testing/text-stream.js';

describe('createSseReader', () => {
  it('reassembles events split anywhere, with any line ending', () => {
    const seen: string[] = [];
    const reader = createSseReader((data) => seen.push(data));
    for (const piece of [
      'event: a\r',
      '\ndata: {"x":',
      '1}\r\n\r\nda',
      'ta: two\ndata: lines\n',
      '\n: note\n\n',
    ]) {
      reader.push(piece);
    }
    expect(seen).toEqual(['{"x":1}', 'two\nlines']);
  });
});

describe('tapEventStream', () => {
  it('passes every chunk through unchanged, one by one, and reads events on the side', async () => {
    const chunks = ['data: {"n":1}\n', '\ndata: {"n":2}\n\n', 'data: [DONE]\n\n'];
    const seen: string[] = [];
    let outcome = '';
    const tapped = tapEventStream(
      streamOf(chunks),
      (data) => seen.push(data),
      (end) => {
        outcome = end;
      },
    );
    const received: string[] = [];
    const decoder = new TextDecoder();
    for await (const chunk of tapped) received.push(decoder.decode(chunk));
    expect(received).toEqual(chunks);
    expect(seen).toEqual(['{"n":1}', '{"n":2}', '[DONE]']);
    expect(outcome).toBe('complete');
  });

  it('reports a cancelled stream and cancels its source', async () => {
    let sourceCancelled = false;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('data: x\n\n'));
      },
      cancel() {
        sourceCancelled = true;
      },
    });
    let outcome = '';
    const tapped = tapEventStream(
      source,
      () => {
        throw new Error('a failing observer never breaks the stream');
      },
      (end) => {
        outcome = end;
      },
    );
    const reader = tapped.getReader();
    await reader.read();
    await reader.cancel();
    expect(outcome).toBe('cancelled');
    expect(sourceCancelled).toBe(true);
  });
});
