/**
 * Recovery pointers in what the proxy forwarded, for tests that check a governed view stays
 * recoverable whatever the planner chose to fold: one tool output (`function:read_file:3`) or
 * the work after a request up to a step (`conversation:user:1@18`). Tests that accept any key
 * read the keys from the view and expand them from the sidecar, as the model would.
 */
import { createGovernor } from '../../core/governor/create-governor.js';
import type { SidecarStore } from '../../core/store.js';
import { hashApiKey } from '../session-identity.js';
import { fileContent } from './agent-conversation.js';

/**
 * `expand("<key>")` as it reads inside a JSON body. The expand tool's own description says
 * `expand("<id>")`: that placeholder is no pointer.
 */
const POINTER = /expand\(\\"([^"\\]+)\\"\)/g;

/** The keys of every recovery pointer in a raw JSON body, in order of first appearance. */
export function pointerKeys(rawBody: string): string[] {
  const keys = [...rawBody.matchAll(POINTER)].map((match) => match[1]!).filter((key) => key !== '<id>');
  return [...new Set(keys)];
}

/** The `turn`-th file read of the test conversation as it reads inside a JSON body. */
export function escapedFile(turn: number): string {
  return JSON.stringify(fileContent(turn)).slice(1, -1);
}

/** The file reads among the first `turns` whose content is not in `rawBody` verbatim. */
export function filesOutOf(rawBody: string, turns: number): number[] {
  return Array.from({ length: turns }, (_, turn) => turn).filter(
    (turn) => !rawBody.includes(escapedFile(turn)),
  );
}

/** The store's session id of a proxied conversation: the key's hash, then the session header. */
export function storeSessionOf(response: Response, apiKey = 'sk-test-key'): string {
  const keyHash = hashApiKey(new Headers({ authorization: `Bearer ${apiKey}` }));
  return `${keyHash}:${response.headers.get('x-selfgc-session')}`;
}

/** What `expand(key)` answers for each key, read from the session's sidecar as the governor does. */
export async function expandKeys(
  store: SidecarStore,
  sessionId: string,
  keys: readonly string[],
): Promise<Map<string, string | undefined>> {
  const governor = createGovernor({ provider: 'openai', window: 2000, store });
  const expanded = new Map<string, string | undefined>();
  for (const key of keys) expanded.set(key, await governor.expand(sessionId, key));
  return expanded;
}

/**
 * The file reads a forwarded body holds back (not verbatim in it) that none of the pointers it
 * shows recovers: empty when everything the view left out is one `expand` away.
 */
export async function unrecoverableFiles(
  store: SidecarStore,
  sessionId: string,
  rawBody: string,
  turns: number,
): Promise<number[]> {
  const expanded = [...(await expandKeys(store, sessionId, pointerKeys(rawBody))).values()];
  return filesOutOf(rawBody, turns).filter(
    (turn) => !expanded.some((text) => text?.includes(fileContent(turn)) === true),
  );
}

/** The text of the last tool result in a request body of any governed route. */
export function lastToolResult(body: unknown): string | undefined {
  const record = body as { messages?: unknown[]; input?: unknown[] };
  const last = (record.messages ?? record.input ?? []).at(-1) as Record<string, unknown> | undefined;
  if (last === undefined) return undefined;
  if (last.type === 'function_call_output') return String(last.output);
  if (last.role === 'tool') return String(last.content);
  const blocks = Array.isArray(last.content) ? (last.content as Array<Record<string, unknown>>) : [];
  const result = blocks.findLast((block) => block.type === 'tool_result');
  return result === undefined ? undefined : String(result.content);
}

/** A page of recovered content and where the next one starts, as `selfgc_expand` writes it. */
export interface ExpandPage {
  text: string;
  start: number;
  end: number;
  total: number;
  /** The offset of the next page, or undefined on the last one. */
  next: number | undefined;
}

const PAGE_NOTE =
  /\n\[selfgc: characters (\d+)–(\d+) of (\d+) of (\S+)\. (?:Call selfgc_expand with \{"id": "\S+", "offset": (\d+)\} for the next page|This is the last page)\.\]$/;

/** An expand result read as a page; a whole payload (no note) is one page from 0 to its end. */
export function readExpandPage(result: string): ExpandPage {
  const note = PAGE_NOTE.exec(result);
  if (note === null)
    return { text: result, start: 0, end: result.length, total: result.length, next: undefined };
  const [, start, end, total, , next] = note;
  return {
    text: result.slice(0, note.index),
    start: Number(start),
    end: Number(end),
    total: Number(total),
    next: next === undefined ? undefined : Number(next),
  };
}
