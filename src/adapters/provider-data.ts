/**
 * Helpers for the opaque `providerData` that adapters attach to canonical messages and parts.
 *
 * Each adapter keeps its own slice under one namespace key (`openaiChat`, `openaiResponses`,
 * `anthropic`, `aiSdk`), so that data from one provider is never misread by another. A slice
 * holds only what the canonical shape cannot say: shape choices (string versus array content),
 * provider ids and statuses, and `extra` — the wire fields an adapter does not map, re-emitted
 * after the known fields so that a round trip loses nothing.
 */

export type JsonRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** This adapter's slice of a holder's providerData (empty when absent). */
export function readSlice(holder: { providerData?: JsonRecord } | undefined, namespace: string): JsonRecord {
  const slice = holder?.providerData?.[namespace];
  return isRecord(slice) ? slice : {};
}

/**
 * `{ providerData: { [namespace]: slice } }` for spreading into a message or part, or `{}` when
 * every value of the slice is undefined, so hint-free objects carry no providerData at all.
 */
export function sliceProviderData(namespace: string, slice: JsonRecord): { providerData?: JsonRecord } {
  const defined: JsonRecord = {};
  for (const [key, value] of Object.entries(slice)) if (value !== undefined) defined[key] = value;
  return Object.keys(defined).length > 0 ? { providerData: { [namespace]: defined } } : {};
}

/** The fields of a wire object that an adapter does not map, in their original order. */
export function extrasOf(source: object, known: readonly string[]): JsonRecord | undefined {
  let extra: JsonRecord | undefined;
  for (const [key, value] of Object.entries(source)) {
    if (known.includes(key)) continue;
    extra ??= {};
    extra[key] = value;
  }
  return extra;
}

/** Re-attach remembered extras after the known fields; a known field is never overwritten. */
export function withExtras<T extends object>(target: T, extra: unknown): T {
  if (!isRecord(extra)) return target;
  const result: JsonRecord = { ...(target as JsonRecord) };
  for (const [key, value] of Object.entries(extra)) if (!(key in result)) result[key] = value;
  return result as T;
}

/** A remembered string hint, or undefined when absent or of the wrong type. */
export function stringHint(slice: JsonRecord, key: string): string | undefined {
  const value = slice[key];
  return typeof value === 'string' ? value : undefined;
}
