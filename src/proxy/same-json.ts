/**
 * Whether two values write the same JSON text: the same keys in the same order (those whose
 * value is undefined left out, as `JSON.stringify` leaves them out), the same values. Strings
 * that are one object compare at once, so two trees built from one parse compare in time
 * proportional to their nodes, not their text.
 */
export function sameJson(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) return false;
  if (Array.isArray(left)) return Array.isArray(right) && sameElements(left, right);
  if (Array.isArray(right)) return false;
  return sameMembers(left as Record<string, unknown>, right as Record<string, unknown>);
}

function sameElements(left: readonly unknown[], right: readonly unknown[]): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index += 1) {
    // `JSON.stringify` writes an undefined element as null: only one written alike is the same.
    if (!sameJson(left[index] ?? null, right[index] ?? null)) return false;
  }
  return true;
}

function sameMembers(left: Record<string, unknown>, right: Record<string, unknown>): boolean {
  const leftKeys = Object.keys(left);
  const rightKeys = Object.keys(right);
  let rightIndex = 0;
  for (const key of leftKeys) {
    const value = left[key];
    if (value === undefined) continue;
    while (rightIndex < rightKeys.length && right[rightKeys[rightIndex]!] === undefined) rightIndex += 1;
    if (rightKeys[rightIndex] !== key || !sameJson(value, right[key])) return false;
    rightIndex += 1;
  }
  while (rightIndex < rightKeys.length && right[rightKeys[rightIndex]!] === undefined) rightIndex += 1;
  return rightIndex === rightKeys.length;
}
