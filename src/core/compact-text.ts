/**
 * Short text for replacements and ledger rows: one line, token counts in `k`.
 */

/** Collapse whitespace and cut to `max` characters, marking the cut. */
export function oneLine(value: string, max: number): string {
  const flat = value.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, Math.max(0, max - 1))}…` : flat;
}

/** `2.1k` for 2100, `640` for 640. */
export function compactTokens(tokens: number): string {
  return tokens >= 1000 ? `${(tokens / 1000).toFixed(1)}k` : String(tokens);
}
