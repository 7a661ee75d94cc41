import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { collectText } from './child-output.js';

describe('collectText', () => {
  it('keeps a character whose bytes arrive in two reads whole', async () => {
    const stream = new PassThrough();
    const text = collectText(stream);
    const ellipsis = Buffer.from('truncated…anner', 'utf8');
    const split = ellipsis.indexOf(0x80);
    stream.write(ellipsis.subarray(0, split));
    await new Promise((resolve) => setImmediate(resolve));
    stream.end(ellipsis.subarray(split));
    await new Promise((resolve) => stream.once('end', resolve));
    expect(text()).toBe('truncated…anner');
  });

  it('keeps only the last characters when asked', async () => {
    const stream = new PassThrough();
    const text = collectText(stream, 4);
    stream.end('abcdefgh');
    await new Promise((resolve) => stream.once('end', resolve));
    expect(text()).toBe('efgh');
  });
});
