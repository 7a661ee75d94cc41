import type { z } from 'zod';
import { BadInputError } from '../core/errors.js';

/**
 * Check every wire message (from index `from` on: those before were checked by an earlier
 * reading) against its adapter's schema before any conversion, and fail with a BadInputError
 * that names the adapter, the message index and the offending field.
 */
export function validateMessages<T>(input: unknown, schema: z.ZodType<T>, label: string, from = 0): T[] {
  if (!Array.isArray(input)) throw new BadInputError(`${label}: expected an array`);
  for (let index = from; index < input.length; index += 1)
    validateMessage(input[index], schema, label, index);
  return input as T[];
}

/** Check one wire message (or item) at `index`; `label` names it, e.g. `openai-chat message`. */
export function validateMessage<T>(item: unknown, schema: z.ZodType<T>, label: string, index: number): T {
  const result = schema.safeParse(item);
  if (result.success) return item as T;
  throw new BadInputError(`${label} ${index}: ${describeIssues(result.error.issues)}`, {
    messageIndex: index,
  });
}

type Issue = z.core.$ZodIssue;

/** The most specific issue: inside a union, the branch that got furthest wins. */
export function describeIssues(issues: readonly Issue[], prefix: readonly PropertyKey[] = []): string {
  const issue = issues[0];
  if (!issue) return 'invalid input';
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const deepest = [...issue.errors].sort((a, b) => depth(b) - depth(a))[0];
    if (deepest && deepest.length > 0) return describeIssues(deepest, path);
  }
  const where = path.length > 0 ? `${path.map(String).join('.')}: ` : '';
  return `${where}${issue.message}`;
}

function depth(issues: readonly Issue[]): number {
  return Math.max(0, ...issues.map((issue) => issue.path.length));
}
