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
