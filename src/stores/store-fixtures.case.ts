import { randomUUID } from 'node:crypto';
import { type CommitRecord, type SidecarRecord, STORE_SCHEMA_VERSION } from '../core/store.js';

/** A fresh session id, so tests sharing one backend never see each other. */
export function newSessionId(): string {
  return `session-${randomUUID()}`;
}

export function payloadRecord(
  sessionId: string,
  objectId: string,
  overrides: Partial<SidecarRecord> = {},
): SidecarRecord {
  const payload = overrides.payload ?? `{"type":"text","text":"payload of ${objectId}"}`;
  return {
    schemaVersion: STORE_SCHEMA_VERSION,
    sessionId,
    objectId,
    operation: 'fold',
    payload,
    searchText: payload,
    tokens: 42,
    commitId: 'commit-1',
    createdAt: 1_767_225_600_000,
    ...overrides,
  };
}

export function commitRecord(
  sessionId: string,
  commitId: string,
  sequence: number,
  overrides: Partial<CommitRecord> = {},
): CommitRecord {
  return {
    schemaVersion: STORE_SCHEMA_VERSION,
    sessionId,
    commitId,
    sequence,
    createdAt: 1_767_225_600_000 + sequence,
    planner: 'embedded',
    trigger: 'pressure',
    operations: [
      {
        objectId: `function:read_file:${sequence}`,
        operation: 'fold',
        reason: 'superseded by a later read of the same file',
        tokensBefore: 1200,
        tokensAfter: 80,
      },
    ],
    tokensBefore: 50_000,
    tokensAfter: 48_880,
    ...overrides,
  };
}

/** Every code unit from U+0001 to U+00FF, and line and format separators: no NUL. */
const binaryLooking = `${Array.from({ length: 255 }, (_, index) => String.fromCharCode(index + 1)).join('')}\u2028\u2029\uFEFF\r\n\t`;

function megabyteOfLines(): string {
  const lines: string[] = [];
  let size = 0;
  for (let index = 0; size < 1024 * 1024; index += 1) {
    const line = `${index.toString(36)} src/module-${index % 97}/file.ts:${index} ok ✓ {"k":${index}}\n`;
    lines.push(line);
    size += line.length;
  }
  return lines.join('');
}

/** Payloads that must come back byte for byte. */
export const roundTripPayloads: Record<string, string> = {
  empty: '',
  json: '[{"type":"tool-result","toolCallId":"call_1","output":"ok\\n\\"quoted\\""}]',
  unicode: 'naïve café — 日本語のテキスト — Ελληνικά — עברית — Ünïcödé Ⅻ ﬁ',
  emoji: '👩‍👩‍👧‍👦 🚀🔥 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🇫🇷 ✅ \u{1F9EA}',
  binaryLooking,
  whitespace: '  leading and trailing  \n\n\t\r\n  ',
  megabyte: megabyteOfLines(),
};

/** Search corpus: `migration` matches both terms of "database migration", often. */
export const searchCorpus = {
  migration:
    'The database migration failed because the migration lock was held by another worker. ' +
    'Retry the migration after releasing the lock on the schema_migrations table.',
  driver: 'Installed the database driver package and ran the unit tests; all 214 tests passed.',
  weather: 'Weather report for the deploy window: sunny, light wind, no incidents expected.',
};

/** Queries that carry FTS or tsquery syntax; a store must treat them as plain words. */
export const hostileQueries = [
  '"foo AND (bar',
  '*',
  'foo*',
  '"',
  "'",
  "it's",
  'NEAR(foo bar)',
  'a:b',
  'column:value',
  '-foo',
  '^start',
  'foo | bar & !baz <-> qux',
  'AND OR NOT',
  '\\',
  '%_%',
  '🚀',
  '()',
  ';DROP TABLE x;--',
];
