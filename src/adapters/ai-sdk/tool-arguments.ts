/**
 * Canonical tool arguments are JSON text; AI SDK tool calls hold the parsed `input`. Text that
 * `JSON.stringify` would not reproduce (other spacing, key order, escapes) travels in
 * `providerOptions.selfGc.arguments`, a key no provider reads, so the round trip is byte-exact.
 * Text that is not JSON at all travels as the `input` string itself, as the AI SDK does for
 * invalid tool calls.
 */

export const NAMESPACE = 'aiSdk';

/** The `providerOptions` key that carries the original arguments text. */
export const ARGUMENTS_OPTION = 'selfGc';

export function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** True when `text` is JSON for the same value as `input`. */
export function sameJson(text: string, input: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(input);
  } catch {
    return false;
  }
}

/** The `input` for canonical arguments, and whether the text itself must be remembered. */
export function inputOf(text: string): { input: unknown; remember: boolean; malformed: boolean } {
  try {
    const input: unknown = JSON.parse(text);
    return { input, remember: JSON.stringify(input) !== text, malformed: false };
  } catch {
    return { input: text, remember: false, malformed: true };
  }
}
