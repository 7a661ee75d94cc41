import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BadInputError, SelfGcError } from '../core/errors.js';
import { decodeBody, readZstdFrames } from './content-coding.js';
import { type BodyChunks, joinChunks } from './read-body-bytes.js';
import { zstdFrame, zstdRawFrame, zstdSlowFrame } from './testing/zstd-frame.js';

/** 400 lines the real `zstd -3` (v1.5.4) compressed into the frame below (with its checksum). */
const TEXT = Array.from(
  { length: 400 },
  (_, i) => `line ${i}: the ledger folds object ${(i * 7919) % 1000} into the sidecar`,
).join('\n');
const ZSTD_OF_TEXT = [
  'KLUv/WRSVL0kAAZ8cxhwS0Fzyc9Avv62FP3/H7S0ZMtkH/p/N1mDAGwAXABGZ1RHQ0L6GR3rkIzMTDNqrIZs5qZCylFqmUpF',
  'OHIjRUIlYv3aEiv3dkhNWtOhW9M+u+65nN9bJ6EMJ46iFckoxzl4JOt7aq2UkOZmqEhqqlb7eDwkEhQLgAUBggRCwaDQkKA4',
  'jEMDQQJhQOHAgFgoFBwWEgaIxOKQOGg4BIxDIkGxCCQWi8YjyTlL4ZBILBqPJLm0QpETqREikerWcbUjyVmWwiGxWDQeSZKz',
  'MkRlk8XBebSDMngyasbQYGvQxrhBOzrh/Y2e9UhO5qZj3ZWV2ZzVSDtabVOr2GODyqioSqy+qiKWXG1R6IRqaIhaxHdZnuna',
  'tu/5f5dnmq7te86/y/NM1/b9/HuXZ7q27Xv+3+WZpmv75t/leaZr++eP2fF1XDKeGZfGrPGwsdnxSHLOUjgkEovGI0lurS02',
  'pmyKqKRqq3FlR5KzLIUTRkd1Yvddy95WKp1Sq1brtextWymZmmpUWRVZr2XZaUoV4tANFdEUidE3LXtbqXRKrVqt17L3ttIp',
  'tVq1Xsuyt5VOp9Sq9dqyt5VKp9Sq1Xote28rnVKrtX3P+Xd5nunavp8fgx+okihz+7FnYo6R0IjwDRJIEPgVBEYQaRFY75uH',
  'oyNpYvFcHUopQMVD0rX1oOoqbsrMlcZHAzlXxxZ3W0NkCQVirg4JDlDO6FxpYwPE0VaSK43OrorGRFIptE3cheaZu0LbgWeB',
  'mmAtcFccemAtYD+0L9wVFZEBb+vj/HX+nl0d7n2/ND7OX7erv64uIq58PjvO1847dgW9Vi7+nTRznq+vn4e6mrXNn2PX+/Kk',
  'rjhd7eOuyvfX2Wr2jteVA1Z9GfL7fDl2f18v6OpLny+t3/fPGV1hmqsb44zCE1Mq/LtAbXB2XUEvKg1TVFhm6AW52oe5erVh',
  'BMIYgjCMIBwjBRRTrmpctS+u/HA18FZBbtXXVhm26l0rerXqppUWWtnPajErKavIycuqgMpqTFZhrNy6HIt65C/zqkGhrkp+',
  'V9WxqiFVBaOq3VTFSRU/qrSgqu+puJ2q2lSLqZSlon+pFpQqKKn6kSpzVD1GRV9UXaLSGiq6UNWC6gGq91ONUPgp+f2Um09Z',
  'T71TS5V1YNZnM4PCxVT+x1QGU3kvhe5SvZbSxVL2lcqq1JCU8qGUxkk5k2olRf+S6pLUkJGCidSOQyrsBlL9/0fpezyq99VR',
  '+h2O6nVt1HrTqO8O3rzKm04jRTnCZN/PL4O/L7vzDeTmi7zjC9/hOOxfL8dDL+sRbCjkJR1B+0CgbSvmncxD97MbKedEt8Xb',
  'ENXmPsgWHdwmURzep7Kfyp3oFnhvCOI5GvywXWlm5b15sy/a0vEgCaIIwsmtMPHBbBD3Ul19D6kMdKQMfU8s2oa9MPHB2nYQ',
  '4sRzyGpflDup7zlzQ0wB5Zj73O6HZq6/3U/lTnR7odQevEZDyF1/yGPHObmHLe6wjzl0IhsqsYZ+JEMtxlD8Ag4GDbcLayx4',
  'USjEzXbOtHNNOzbXzHbOtHNMO2ek7Rz+mYP9tbUWgF8rWzfc4Q==',
].join('');

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `bytes` in chunks of `size`, as a socket would hand them over. */
function chunked(bytes: Uint8Array, size = 1_000): BodyChunks {
  const chunks: Uint8Array[] = [];
  for (let offset = 0; offset < bytes.byteLength; offset += size)
    chunks.push(bytes.subarray(offset, offset + size));
  return { chunks, byteLength: bytes.byteLength };
}

async function decodedText(bytes: Uint8Array, coding: string, limit = 1 << 20): Promise<string> {
  const body = await decodeBody(chunked(bytes), coding, limit);
  if (body === undefined) throw new Error(`${coding}: not decoded`);
  expect(body.byteLength).toBe(body.chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  return decoder.decode(joinChunks(body));
}

describe('decodeBody', () => {
  const plain = encoder.encode(TEXT);

  it('reads a frame the real zstd encoder wrote (compressed blocks, checksum)', async () => {
    const frame = Buffer.from(ZSTD_OF_TEXT, 'base64');
    expect(frame.byteLength).toBeLessThan(plain.byteLength / 10);
    expect(await decodedText(frame, 'zstd')).toBe(TEXT);
  });

  it('reads zstd raw blocks, the test encoder, over several blocks', async () => {
    const big = encoder.encode(TEXT.repeat(8));
    expect(big.byteLength).toBeGreaterThan(128 * 1024);
    expect(await decodedText(zstdRawFrame(big), 'zstd')).toBe(TEXT.repeat(8));
  });

  it.each([
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const)('reads %s', async (coding, compress) => {
    expect(await decodedText(compress(plain), coding)).toBe(TEXT);
  });

  it('undoes stacked codings last first, in any case and spacing', async () => {
    expect(await decodedText(zstdRawFrame(gzipSync(plain)), 'GZIP , zstd')).toBe(TEXT);
  });

  it('leaves a body without a coding (or identity) as it came', async () => {
    const body = chunked(plain);
    expect(await decodeBody(body, null, 1 << 20)).toBe(body);
    expect(await decodeBody(body, 'identity', 1 << 20)).toBe(body);
  });

  it('reads nothing in a coding it does not know', async () => {
    expect(await decodeBody(chunked(plain), 'compress', 1 << 20)).toBeUndefined();
    expect(await decodeBody(chunked(plain), 'gzip, x-custom', 1 << 20)).toBeUndefined();
  });

  it('refuses bytes that are not what the coding says, as bad input', async () => {
    for (const coding of ['zstd', 'gzip', 'br']) {
      const refused = decodeBody(chunked(plain), coding, 1 << 20);
      await expect(refused).rejects.toBeInstanceOf(BadInputError);
      await expect(refused).rejects.toThrow(`request body is not valid ${coding} data`);
    }
    // A body cut short is refused too, never read as far as it goes.
    const cutGzip = gzipSync(plain).subarray(0, 200);
    await expect(decodeBody(chunked(cutGzip), 'gzip', 1 << 20)).rejects.toBeInstanceOf(BadInputError);
    const cutZstd = Buffer.from(ZSTD_OF_TEXT, 'base64').subarray(0, 1_000);
    await expect(decodeBody(chunked(cutZstd), 'zstd', 1 << 20)).rejects.toBeInstanceOf(BadInputError);
  });

  it('stops at the limit: a small body that inflates past it is too large', async () => {
    const bomb = gzipSync(new Uint8Array(64 << 20));
    expect(bomb.byteLength).toBeLessThan(100_000);
    const refused = decodeBody(chunked(bomb), 'gzip', 1 << 20);
    await expect(refused).rejects.toBeInstanceOf(SelfGcError);
    await expect(refused).rejects.toMatchObject({ code: 'payload-too-large' });
  });

  it('stops decoding zstd past the limit: a small body that inflates past it is too large', async () => {
    // RLE blocks: 4 bytes each for 128 KiB of output, 400 bytes for 12.5 MiB.
    const rle = zstdFrame(Array.from({ length: 100 }, () => ({ byte: 0x61, size: 128 * 1024 })));
    expect(rle.byteLength).toBeLessThan(500);
    expect(readZstdFrames(rle)).toEqual({
      declared: 0,
      inPlace: false,
      blocks: 100,
      shifted: 100 * 128 * 1024,
      decodable: true,
    });
    await expect(decodeBody(chunked(rle), 'zstd', 1 << 20)).rejects.toMatchObject({
      code: 'payload-too-large',
    });
    // A declared size past the limit is refused from the header, whatever the blocks hold.
    const declared = zstdFrame([plain.subarray(0, 10)], { contentSize: 4 << 20 });
    expect(readZstdFrames(declared)).toMatchObject({ declared: 4 << 20, inPlace: true, decodable: true });
    await expect(decodeBody(chunked(declared), 'zstd', 1 << 20)).rejects.toMatchObject({
      code: 'payload-too-large',
    });
    // Within the limit, RLE and raw blocks decode.
    const mixed = zstdFrame([{ byte: 0x61, size: 1_000 }, plain.subarray(0, 5), { byte: 0x62, size: 3 }]);
    expect(await decodedText(mixed, 'zstd')).toBe(`${'a'.repeat(1_000)}${TEXT.slice(0, 5)}bbb`);
  });

  it('decodes many small compressed blocks, as an encoder that flushes often writes them', async () => {
    // 1,100 blocks of 20 bytes: each would count as 128 KiB if the output were guessed from headers.
    const parts = Array.from({ length: 1_100 }, (_, index) => plain.subarray(index * 20, index * 20 + 20));
    const frame = zstdFrame(parts.map((part) => ({ literals: part })));
    expect(await decodedText(frame, 'zstd', 1 << 20)).toBe(TEXT.slice(0, 22_000));
  });

  it('passes on a valid zstd body it will not decode: a dictionary, a huge window, too many windows', async () => {
    const text = plain.subarray(0, 100);
    const cases = [
      zstdFrame([text], { dictionary: 7 }),
      // A window past RFC 9659's 8 MiB, in a frame that declares no size: fzstd would allocate it.
      zstdFrame([text], { windowLog: 24 }),
      // Nine frames of 8 MiB windows: 72 MiB of buffers for 100 bytes of text each.
      Buffer.concat(Array.from({ length: 9 }, () => zstdFrame([text], { windowLog: 23 }))),
      // More frames than any encoder writes.
      Buffer.concat(Array.from({ length: 65 }, () => zstdRawFrame(text))),
    ];
    for (const frame of cases) {
      expect(readZstdFrames(frame).decodable).toBe(false);
      expect(await decodeBody(chunked(frame), 'zstd', 1 << 20)).toBeUndefined();
    }
    // The same blocks under a window it supports decode.
    expect(await decodedText(zstdFrame([text], { windowLog: 23 }), 'zstd')).toBe(TEXT.slice(0, 100));
  });

  it('refuses raw and RLE blocks past what their frame declares, and blocks past the window', async () => {
    // fzstd would decode a declared size of 0 beside a window block by block, 12.5 MiB of it.
    const rle = zstdFrame(
      Array.from({ length: 100 }, () => ({ byte: 0x61, size: 128 * 1024 })),
      { contentSize: 0, singleSegment: false },
    );
    const over = zstdFrame([plain.subarray(0, 20)], { contentSize: 10 });
    const wide = zstdFrame([plain.subarray(0, 2_000)], { windowLog: 10 });
    for (const frame of [rle, over, wide]) {
      await expect(decodeBody(chunked(frame), 'zstd', 1 << 20)).rejects.toBeInstanceOf(BadInputError);
    }
  });

  it('gives a body decoding time only for blocks that hold something', () => {
    const empty = Array.from({ length: 400 }, () => new Uint8Array(0));
    const frame = zstdFrame([...empty, plain.subarray(0, 10)], { windowLog: 23 });
    expect(readZstdFrames(frame)).toMatchObject({ blocks: 1, shifted: 8 * 1024 * 1024, decodable: true });
  });

  it('reads no further than a million blocks: such a body passes on', async () => {
    const blocks = 1_000_001;
    const frame = new Uint8Array(6 + 3 * blocks);
    frame.set([0x28, 0xb5, 0x2f, 0xfd, 0, (17 - 10) << 3]);
    frame[frame.byteLength - 3] = 1;
    expect(readZstdFrames(frame).decodable).toBe(false);
    expect(await decodeBody(chunked(frame, 1 << 20), 'zstd', 32 << 20)).toBeUndefined();
  });

  it('decodes off the proxy thread: a crafted slow block runs out its deadline and passes on', async () => {
    const slow = zstdSlowFrame(98_303);
    expect(slow.byteLength).toBeLessThan(30);
    let ticks = 0;
    const ticking = setInterval(() => {
      ticks += 1;
    }, 10);
    const decoded = await decodeBody(chunked(slow), 'zstd', 1 << 20);
    clearInterval(ticking);
    expect(decoded).toBeUndefined();
    // The proxy's thread kept running all along (on it, fzstd would have held it for seconds).
    expect(ticks).toBeGreaterThan(5);
    // A new thread decodes the next body.
    expect(await decodedText(zstdRawFrame(plain), 'zstd')).toBe(TEXT);
  });

  it('decodes the bodies queued behind a slow one', async () => {
    const slow = decodeBody(chunked(zstdSlowFrame(98_303)), 'zstd', 1 << 20);
    const valid = [0, 1, 2].map((index) =>
      decodedText(zstdRawFrame(plain.subarray(index * 100, index * 100 + 100)), 'zstd'),
    );
    // The slow one runs out its deadline and passes on; the others decode after it.
    expect(await Promise.all(valid)).toEqual(
      [0, 1, 2].map((index) => TEXT.slice(index * 100, index * 100 + 100)),
    );
    expect(await slow).toBeUndefined();
  });

  it("decodes one client's body while another's crafted slow bodies wait their turn", async () => {
    // More slow bodies than one thread, or two taking them in order, would get through before the
    // other client's body waited its limit (four seconds).
    const flood = Array.from({ length: 40 }, () =>
      decodeBody(chunked(zstdSlowFrame(98_303)), 'zstd', 1 << 20, 'tenant-a'),
    );
    const started = performance.now();
    const other = await decodeBody(chunked(zstdRawFrame(plain)), 'zstd', 1 << 20, 'tenant-b');
    expect(other && decoder.decode(joinChunks(other))).toBe(TEXT);
    expect(performance.now() - started).toBeLessThan(4_000);
    // The flood passes on undecoded: out of time, or of waiting.
    expect(new Set(await Promise.all(flood))).toEqual(new Set([undefined]));
  }, 20_000);

  it('skips skippable frames, and reads frames one after another', async () => {
    const skippable = Uint8Array.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
    const body = Buffer.concat([
      skippable,
      zstdRawFrame(plain.subarray(0, 10)),
      zstdRawFrame(plain.subarray(10, 20)),
    ]);
    expect(await decodedText(body, 'zstd')).toBe(TEXT.slice(0, 20));
  });

  it('refuses zstd headers the format does not allow, as bad input', async () => {
    const reserved = zstdRawFrame(plain.subarray(0, 10));
    reserved[4] = reserved[4]! | 0b1000;
    const oversized = zstdFrame([{ byte: 0x61, size: 128 * 1024 + 1 }]);
    const cutHeader = zstdRawFrame(plain.subarray(0, 10)).subarray(0, 9);
    for (const frame of [reserved, oversized, cutHeader]) {
      await expect(decodeBody(chunked(frame), 'zstd', 1 << 20)).rejects.toBeInstanceOf(BadInputError);
    }
  });

  it('reads nothing stacked more than three deep', async () => {
    const fourDeep = gzipSync(gzipSync(gzipSync(gzipSync(plain))));
    expect(await decodeBody(chunked(fourDeep), 'gzip, gzip, gzip, gzip', 1 << 20)).toBeUndefined();
    expect(await decodedText(gzipSync(gzipSync(gzipSync(plain))), 'gzip,gzip,gzip')).toBe(TEXT);
  });
});
