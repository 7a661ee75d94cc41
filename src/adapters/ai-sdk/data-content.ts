import type { ImagePart } from '../../core/transcript.js';
import { buildBase64DataUri, parseDataUri } from '../data-uri.js';
import type { ModelDataContent } from './ai-sdk-api.js';

/** How an AI SDK image or file held its data, when it was not a plain URL or data-URL string. */
export type DataForm = 'base64' | 'bytes' | 'array-buffer' | 'url-object';

const URL_STRING = /^[a-z][a-z0-9+.-]*:\/\//i;

/** AI SDK data content to a canonical image reference; `form` says how to write it back. */
export function readDataContent(
  data: ModelDataContent,
  mediaType: string | undefined,
): Pick<ImagePart, 'ref' | 'source' | 'mediaType'> & { form?: DataForm } {
  const typed = mediaType === undefined ? {} : { mediaType };
  if (data instanceof URL) return { ref: data.href, source: 'url', ...typed, form: 'url-object' };
  if (typeof data === 'string') {
    if (data.startsWith('data:')) {
      const parsed = parseDataUri(data)?.mediaType;
      return { ref: data, source: 'data', ...(parsed ? { mediaType: parsed } : {}), ...typed };
    }
    if (URL_STRING.test(data)) return { ref: data, source: 'url', ...typed };
    return { ref: buildBase64DataUri(mediaType ?? '', data), source: 'data', ...typed, form: 'base64' };
  }
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const base64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  const form = data instanceof Uint8Array ? 'bytes' : 'array-buffer';
  return { ref: buildBase64DataUri(mediaType ?? '', base64), source: 'data', ...typed, form };
}

/** A canonical image reference back to AI SDK data content, in the remembered form. */
export function writeDataContent(part: Pick<ImagePart, 'ref' | 'source'>, form: unknown): ModelDataContent {
  if (part.source === 'url') return form === 'url-object' ? new URL(part.ref) : part.ref;
  const payload = parseDataUri(part.ref);
  if (!payload?.base64 || part.source !== 'data') return part.ref;
  if (form === 'base64') return payload.data;
  if (form === 'bytes' || form === 'array-buffer') {
    const bytes = Uint8Array.from(Buffer.from(payload.data, 'base64'));
    return form === 'bytes' ? bytes : bytes.buffer;
  }
  return part.ref;
}
