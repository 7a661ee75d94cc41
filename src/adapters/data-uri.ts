/** `data:` URIs: canonical images hold inline bytes as one, providers want the pieces. */

export interface DataUri {
  /** IANA media type; empty when the URI names none. */
  mediaType: string;
  /** The payload after the comma, still encoded. */
  data: string;
  /** True for `;base64` payloads. */
  base64: boolean;
}

const DATA_URI = /^data:([^;,]*)((?:;[^;,]*)*?)(;base64)?,(.*)$/s;

export function parseDataUri(uri: string): DataUri | undefined {
  const match = DATA_URI.exec(uri);
  if (!match) return undefined;
  return { mediaType: match[1] ?? '', data: match[4] ?? '', base64: match[3] !== undefined };
}

export function buildBase64DataUri(mediaType: string, base64Data: string): string {
  return `data:${mediaType};base64,${base64Data}`;
}
