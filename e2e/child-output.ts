/**
 * A child process's output as text. Decoded as one stream, not chunk by chunk: a pipe hands over
 * at most 64 KiB at a time, and a character whose bytes straddle two reads decoded apart turns
 * into replacement characters, so a scenario result would show content no request carried.
 */
import type { Readable } from 'node:stream';

/** The text `stream` has written so far; with `keepLast`, only its last that many characters. */
export function collectText(stream: Readable, keepLast?: number): () => string {
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
    if (keepLast !== undefined && text.length > keepLast) text = text.slice(-keepLast);
  });
  return () => text;
}
