import { describe, expect, it } from 'vitest';
import { joinChunks, movableChunks, ownsItsBuffer, readBodyChunks } from './read-body-bytes.js';

describe('request bodies in chunks', () => {
  it('joins chunks into a plain Uint8Array that owns its memory, so `slice` copies', () => {
    const shared = Buffer.from('xx{"a":1}yy');
    const view = shared.subarray(2, 9);
    const joined = joinChunks({ chunks: [view], byteLength: view.byteLength });
    expect(Buffer.from(joined).toString()).toBe('{"a":1}');
    expect(ownsItsBuffer(joined)).toBe(true);
    expect(Buffer.isBuffer(joined)).toBe(false);
    const copy = joined.slice();
    copy[0] = 0;
    expect(joined[0]).toBe('{'.charCodeAt(0));
    const whole = Buffer.from(new Uint8Array([1, 2, 3]).buffer);
    const one = joinChunks({ chunks: [whole], byteLength: 3 });
    expect(Buffer.isBuffer(one)).toBe(false);
    expect([...one]).toEqual([1, 2, 3]);
  });

  it('makes every chunk own its buffer before it moves: views into a larger buffer are copied', () => {
    const read = new Uint8Array(new ArrayBuffer(8));
    read.set([1, 2, 3, 4, 5, 6, 7, 8]);
    const view = Buffer.from(read.buffer, 2, 3);
    const owned = new Uint8Array([9, 9]);
    const movable = movableChunks({ chunks: [owned, view], byteLength: 5 });
    expect(movable.chunks[0]).toBe(owned);
    expect(movable.chunks[1]).not.toBe(view);
    expect(movable.chunks.every(ownsItsBuffer)).toBe(true);
    expect([...joinChunks(movable)]).toEqual([9, 9, 3, 4, 5]);
    // The copy did not take the larger buffer with it.
    expect(movable.chunks[1]!.buffer.byteLength).toBe(3);
  });

  it('reads a web request in its chunks, refusing one over the limit', async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"a":'));
        controller.enqueue(new TextEncoder().encode('1}'));
        controller.close();
      },
    });
    const request = new Request('http://proxy.test/', {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit);
    const read = await readBodyChunks(request, 100);
    expect(read.byteLength).toBe(7);
    expect(new TextDecoder().decode(joinChunks(read))).toBe('{"a":1}');
    const tooBig = new Request('http://proxy.test/', { method: 'POST', body: 'x'.repeat(200) });
    await expect(readBodyChunks(tooBig, 100)).rejects.toMatchObject({ code: 'payload-too-large' });
  });
});
