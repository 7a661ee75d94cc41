/**
 * A session's governance state as the store keeps it: the committed object states (which,
 * with the ledger, determine the view), the payloads they put in the sidecar, and the governor's
 * trigger bookkeeping. State is bound to content (`ContentBinding`): it is parsed on read,
 * migrated from older versions by code, and checked against each transcript before use
 * (`reconcile-state.ts`).
 */
import { z } from 'zod';
import { StoreError } from './errors.js';
import type { ContentBinding, ObjectState, Plan, ViewState } from './operations.js';
import type { SidecarStore } from './store.js';

/**
 * Version 2 bound every state to the content it was committed for; version 3 added the plan
 * held pending (`pending`); version 4 the tagging of recovery keys (`keysTaggedFrom`), which a
 * version 3 reader would drop when it writes the state back.
 */
export const SESSION_STATE_VERSION = 4;

/**
 * How the ledger numbers objects, which state and payload ids name (`function:<tool>:N`,
 * `conversation:user:K`). Version 3 counts the outputs clients attach to requests
 * (`clientAttachments`, `mentionBlocks`) and the environment reports that follow a step's results;
 * versions 4 and 6 more of what clients send inside the work (`clientOutputSince`). A state
 * written under any other numbering (none written: before the field existed; 2 and 5: development
 * builds that counted some of them otherwise) may name objects otherwise from the first such
 * object on (`reconcile-state.ts` drops what it bound past it). Whatever changes what those
 * recognise changes the numbering, and this number with it.
 */
export const LEDGER_IDS = 6;

/**
 * Numberings only development builds wrote, each of which read some messages after the first
 * request otherwise than any other: a state under one holds only before the second request and
 * the first output a client sent inside the work.
 */
export const DEVELOPMENT_LEDGER_IDS: ReadonlySet<number> = new Set([5]);

/** Trigger bookkeeping carried from call to call (see `governor/`). */
export interface TriggerBookkeeping {
  /** Transcript length at the last governance run, committed or not. */
  lastRunAt: number;
  /** Transcript length at the last commit. */
  lastCommitAt: number;
  /** Governance runs in a row that freed nothing; opens the circuit breaker. */
  fruitlessRuns: number;
  /**
   * Milliseconds of the model call at the last governance run (for the cache TTL clock; the
   * governor also keeps the time of every call it sees in memory, and the later one counts).
   */
  lastCallTime?: number;
  /**
   * The last run's plan, which the cost rule deferred under a warm cache: `reach` is the view's
   * tokens before the latest turn then (what that plan could touch), `shortfall` how many more
   * tokens it would have had to free to pay for breaking the cache (`breakEvenGrowth`). Soft
   * pressure does not run again under a warm cache until the view has grown past `reach` by
   * `shortfall`.
   */
  deferral?: { reach: number; shortfall: number };
}

/**
 * A plan the commit rule deferred, held until the next governance run (the next safe turn
 * boundary), where it is re-validated and committed or dropped instead of planned again.
 */
export interface PendingPlan {
  /** The operations the planner proposed that rehearsal accepted, under the planner's name. */
  plan: Plan;
  /**
   * The transcript it was planned on (`end` is its length then): the plan holds only while that
   * content does.
   */
  binding: ContentBinding;
}

export interface SessionState {
  schemaVersion: number;
  /** Committed object states: absent means live. Each carries its `binding`. */
  objects: ViewState;
  /**
   * Every payload this conversation put in the sidecar, by the key its recovery pointer shows
   * (`function:read_file:12`, `conversation:user:1@57`), with the content it was taken from.
   * The sidecar key itself is `payloadKey(key, binding)`: other content under the same id never
   * shares a record.
   */
  payloads: Readonly<Record<string, ContentBinding>>;
  /** The transcript at the last governance run, to tell an append from a divergence. */
  head?: ContentBinding;
  /** Commits written so far; the next commit's sequence is this plus one. */
  sequence: number;
  triggers: TriggerBookkeeping;
  /** The plan held pending, if any. */
  pending?: PendingPlan;
  /** The numbering the ids of `objects` and `payloads` follow (`LEDGER_IDS`); absent before it existed. */
  ids?: number;
  /**
   * Once the conversation went on otherwise after keys had been offered for recovery: the lowest
   * message where it parted. Keys of content ending at or after it carry a tag of that content
   * (`Ledger.keyTag`), so that no key is ever offered for two contents.
   */
  keysTaggedFrom?: number;
}

/** Trigger bookkeeping without a deferral (`TriggerBookkeeping.deferral`). */
export function withoutDeferral(triggers: TriggerBookkeeping): TriggerBookkeeping {
  const { deferral: _weighed, ...rest } = triggers;
  return rest;
}

export function emptySessionState(): SessionState {
  return {
    schemaVersion: SESSION_STATE_VERSION,
    objects: {},
    payloads: {},
    sequence: 0,
    triggers: { lastRunAt: 0, lastCommitAt: 0, fruitlessRuns: 0 },
    ids: LEDGER_IDS,
  };
}

/**
 * The sidecar key of a payload: the key the view shows, the content it was taken from, and the
 * numbering the key follows (`LEDGER_IDS`). A record another numbering stored for what is now
 * another output of the same message (the same key and binding) keeps a key of its own.
 */
export function payloadKey(key: string, binding: ContentBinding): string {
  return `${key}#${binding.link.slice(0, LINK_CHARS)}.${LEDGER_IDS}`;
}

/** Characters of the binding's link in a sidecar key. */
const LINK_CHARS = 16;

/**
 * Where the payload of a sidecar key `payloadKey` gave may stand, this numbering's key first,
 * then those of earlier ones, down to the key without a numbering that versions before 2 wrote.
 * Only the first that holds a record is the payload: a state keeps an earlier version's payload
 * binding only where every numbering agrees on its id (`reconcile-state.ts`).
 */
export function sidecarKeyCandidates(sidecarKey: string): string[] {
  const base = sidecarKey.slice(0, sidecarKey.lastIndexOf('#') + 1 + LINK_CHARS);
  const earlier = Array.from({ length: LEDGER_IDS - 2 }, (_, index) => `${base}.${LEDGER_IDS - 1 - index}`);
  return [sidecarKey, ...earlier, base];
}

/** The sidecar key behind a recovery key of `state`, or undefined when the state offers none. */
export function sidecarKeyOf(state: SessionState, key: string): string | undefined {
  const binding = state.payloads[key];
  return binding === undefined ? undefined : payloadKey(key, binding);
}

/** The recovery key a sidecar key was stored for (`function:bash:3#…` → `function:bash:3`). */
export function recoveryKeyOf(sidecarKey: string): string {
  const mark = sidecarKey.lastIndexOf('#');
  return mark < 0 ? sidecarKey : sidecarKey.slice(0, mark);
}

const bindingSchema = z.object({ end: z.number().int().nonnegative(), link: z.string().min(1) });

/**
 * An object state, read by its operation: a fold that keeps its request and names where its span
 * ends is a span fold; a fold that does not say where its span ends is a whole fold. Fields
 * another kind of state would hold are dropped.
 */
const objectStateSchema = z
  .object({
    operation: z.enum(['fold', 'mask', 'prune']),
    replacement: z.string(),
    commitId: z.string(),
    tokens: z.number().optional(),
    dropShell: z.boolean().optional(),
    keepRequest: z.boolean().optional(),
    spanEnd: z.number().int().nonnegative().optional(),
    binding: bindingSchema,
  })
  .transform(({ operation, keepRequest, spanEnd, dropShell, tokens, ...rest }): ObjectState => {
    const common = { ...rest, ...(tokens === undefined ? {} : { tokens }) };
    if (operation === 'fold' && keepRequest === true && spanEnd !== undefined)
      return { operation, keepRequest, spanEnd, ...common };
    if (operation === 'prune')
      return { operation, ...common, ...(dropShell === undefined ? {} : { dropShell }) };
    return operation === 'fold' ? { operation: 'fold', ...common } : { operation: 'mask', ...common };
  });

const triggersSchema = z.object({
  lastRunAt: z.number(),
  lastCommitAt: z.number(),
  fruitlessRuns: z.number(),
  lastCallTime: z.number().optional(),
  deferral: z.object({ reach: z.number(), shortfall: z.number() }).optional(),
});

const plannedOperationSchema = z.object({
  objectId: z.string().min(1),
  operation: z.enum(['fold', 'mask', 'prune', 'expand', 'keep']),
  reason: z.string(),
  summary: z.string().optional(),
  dropShell: z.boolean().optional(),
  spanEnd: z.number().int().nonnegative().optional(),
  indexTokens: z.number().int().positive().optional(),
});

const pendingSchema = z.object({
  plan: z.object({ planner: z.string(), operations: z.array(plannedOperationSchema) }),
  binding: bindingSchema,
});

/** Version 2: as version 3, without a pending plan. */
const stateV2Schema = z.object({
  schemaVersion: z.literal(2),
  objects: z.record(z.string(), objectStateSchema),
  payloads: z.record(z.string(), bindingSchema),
  head: bindingSchema.optional(),
  sequence: z.number().int().nonnegative(),
  triggers: triggersSchema,
  ids: z.number().int().positive().optional(),
});

/** Version 3: as version 4, its keys never tagged. */
const stateV3Schema = stateV2Schema.extend({
  schemaVersion: z.literal(3),
  pending: pendingSchema.optional(),
});

const stateSchema = stateV3Schema.extend({
  schemaVersion: z.literal(SESSION_STATE_VERSION),
  keysTaggedFrom: z.number().int().nonnegative().optional(),
});

/** Version 1: object states without bindings, payloads keyed by object id alone. */
const stateV1Schema = z.object({
  schemaVersion: z.literal(1),
  sequence: z.number().int().nonnegative(),
  triggers: triggersSchema,
});

/**
 * Version 1 state cannot be checked against content, so its object states are dropped: the
 * view shows those objects whole again, and the planner folds them anew under version 2 keys.
 * The commit sequence goes on.
 */
function migrateV1(state: z.infer<typeof stateV1Schema>): SessionState {
  return {
    ...emptySessionState(),
    sequence: state.sequence,
    triggers: {
      lastRunAt: 0,
      lastCommitAt: 0,
      fruitlessRuns: 0,
      ...(state.triggers.lastCallTime === undefined ? {} : { lastCallTime: state.triggers.lastCallTime }),
    },
  };
}

/** Version 2 state holds no pending plan, and version 3 no tagging: each is version 4 as it is. */
function migrateV2(state: z.infer<typeof stateV2Schema> | z.infer<typeof stateV3Schema>): SessionState {
  return { ...(state as Omit<SessionState, 'schemaVersion'>), schemaVersion: SESSION_STATE_VERSION };
}

/** Parse `value` with `schema`, or a `StoreError` with the path of what is wrong. */
function parseWith<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new StoreError(`${where}: malformed state at ${issue?.path.join('.') ?? ''}: ${issue?.message}`);
}

/** A stored state parsed, migrated to the current version, or a `StoreError` that says why not. */
export function parseSessionState(value: unknown, where: string): SessionState {
  const version = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (version === 1) {
    const old = stateV1Schema.safeParse(value);
    if (old.success) return migrateV1(old.data);
    throw new StoreError(`${where}: state of schema version 1 is malformed: ${old.error.issues[0]?.message}`);
  }
  if (version === 2) return migrateV2(parseWith(stateV2Schema, value, where));
  if (version === 3) return migrateV2(parseWith(stateV3Schema, value, where));
  if (version !== SESSION_STATE_VERSION) {
    throw new StoreError(`${where}: state schema version ${String(version)} is not ${SESSION_STATE_VERSION}`);
  }
  return parseWith(stateSchema, value, where) as SessionState;
}

/** The stored state of a session (or an empty one at version 0), parsed and migrated. */
export async function readSessionState(
  store: SidecarStore,
  sessionId: string,
): Promise<{ version: number; state: SessionState }> {
  const snapshot = await store.readSession(sessionId);
  if (!snapshot) return { version: 0, state: emptySessionState() };
  return { version: snapshot.version, state: parseSessionState(snapshot.state, `session ${sessionId}`) };
}
