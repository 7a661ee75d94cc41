/**
 * A small, spec-following server-sent events reader for tests: reads a whole `text/event-stream`
 * body and returns its events, so a test can assert on exactly what went over the wire.
 */

export interface SseEvent {
  /** The `event:` field; undefined when the event had none (OpenAI Chat Completions). */
  event: string | undefined;
  /** The `data:` lines joined with `\n`. */
  data: string;
}

/** Parse a complete event-stream text (LF, CR or CRLF line ends; comments ignored). */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  let event: string | undefined;
  let data: string[] = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length > 0) events.push({ event, data: data.join('\n') });
      event = undefined;
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const raw = colon === -1 ? '' : line.slice(colon + 1);
    const value = raw.startsWith(' ') ? raw.slice(1) : raw;
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return events;
}

/** Read a fetch response body to the end (decoding UTF-8 across chunk boundaries) and parse it. */
export async function readSse(response: Response): Promise<SseEvent[]> {
  return parseSse(await response.text());
}

/** The JSON payloads of the events, skipping the OpenAI `[DONE]` sentinel. */
export function sseJson(events: readonly SseEvent[]): Array<Record<string, unknown>> {
  return events.filter((item) => item.data !== '[DONE]').map((item) => JSON.parse(item.data));
}
