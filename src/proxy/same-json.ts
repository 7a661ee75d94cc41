/**
 * Whether two values write the same JSON text: the same keys in the same order (those whose
 * value is undefined left out, as `JSON.stringify` leaves them out), the same values. Strings
 * that are one object compare at once, so two trees built from one parse compare in time
 * proportional to their nodes, not their text.
 */
export function sameJson(left: unknown, right: unknown): boolean {
  return same(left, right, false);
}

/**
 * Whether two values are the same JSON value: as `sameJson`, but an object's members may come in
 * any order (a writer that builds `{role, content, tool_call_id}` for a client's
 * `{role, tool_call_id, content}` says the same thing).
 */
export function sameJsonValue(left: unknown, right: unknown): boolean {
  return same(left, right, true);
}

function same(left: unknown, right: unknown, anyOrder: boolean): boolean {
  if (left === right) return true;
  if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) return false;
  if (Array.isArray(left)) return Array.isArray(right) && sameElements(left, right, anyOrder);
  if (Array.isArray(right)) return false;
  const [leftMembers, rightMembers] = [left as Record<string, unknown>, right as Record<string, unknown>];
  return anyOrder ? sameMembersAnyOrder(leftMembers, rightMembers) : sameMembers(leftMembers, rightMembers);
}

function sameElements(left: readonly unknown[], right: readonly unknown[], anyOrder: boolean): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index += 1) {
    // `JSON.stringify` writes an undefined element as null: only one written alike is the same.
    if (!same(left[index] ?? null, right[index] ?? null, anyOrder)) return false;
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
    if (rightKeys[rightIndex] !== key || !same(value, right[key], false)) return false;
    rightIndex += 1;
  }
  while (rightIndex < rightKeys.length && right[rightKeys[rightIndex]!] === undefined) rightIndex += 1;
  return rightIndex === rightKeys.length;
}

function sameMembersAnyOrder(left: Record<string, unknown>, right: Record<string, unknown>): boolean {
  let members = 0;
  for (const key of Object.keys(left)) {
    const value = left[key];
    if (value === undefined) continue;
    members += 1;
    if (!Object.hasOwn(right, key) || !same(value, right[key], true)) return false;
  }
  for (const key of Object.keys(right)) if (right[key] !== undefined) members -= 1;
  return members === 0;
}
