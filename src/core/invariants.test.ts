/**
 * Property tests of the core's invariants over random canonical transcripts: fold/mask/expand
 * round-trips byte for byte, no view orphans a tool result, ids are stable, commits are
 * idempotent, and a failed commit leaves the session as it was.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { transcriptArbitrary as providerTranscriptArbitrary } from '../adapters/transcript-arbitrary.js';
import { createMemoryStore } from '../stores/memory-store.js';
import { commitRehearsal } from './commit-plan.js';
import { StoreError } from './errors.js';
import { createPinRule } from './governor/pins.js';
import { createLedger, indexTranscript, type Ledger, type LedgerObject } from './ledger.js';
import { type ObjectPayload, objectPayload, parseObjectPayload } from './object-payload.js';
import type { OperationKind, Plan, ViewState } from './operations.js';
import { projectView } from './project-view.js';
import { latestTurnStart, rehearsePlan } from './rehearse-plan.js';
import { payloadKey, readSessionState } from './session-state.js';
import type { SidecarStore } from './store.js';
import { gcTranscriptArbitrary } from './testing/gc-transcript-arbitrary.js';
import { approximateTokenCounter } from './tokens.js';
import type { Message } from './transcript.js';

const RUNS = { numRuns: 150 };

/**
 * Provider-shaped transcripts (every reasoning style, images, spaced JSON arguments) and
 * GC-shaped ones (anchors, long maskable listings, repeated targets, parallel results).
 */
function transcriptArbitrary(options: { unansweredLastCall?: boolean } = {}): fc.Arbitrary<Message[]> {
  return fc.oneof(
    providerTranscriptArbitrary({ toolResultImages: true, endMidCall: options.unansweredLastCall === true }),
    gcTranscriptArbitrary(options),
  );
}
const ledgerOptions = { tokenCounter: approximateTokenCounter };

function index(messages: readonly Message[]): Ledger {
  return indexTranscript(messages, ledgerOptions);
}

const operationKinds: OperationKind[] = ['fold', 'mask', 'prune', 'expand', 'keep'];

/** A random plan: operations on ids picked from the ledger (by index), plus an unknown id now and then. */
const planShape = fc.array(
  fc.record({
    pick: fc.nat(),
    operation: fc.constantFrom(...operationKinds),
    unknown: fc.integer({ min: 0, max: 9 }).map((value) => value === 0),
  }),
  { maxLength: 8 },
);

function planFrom(
  ledger: Ledger,
  shape: Array<{ pick: number; operation: OperationKind; unknown: boolean }>,
): Plan {
  return {
    planner: 'random',
    operations: shape.map((entry) => ({
      objectId:
        entry.unknown || ledger.objects.length === 0
          ? 'function:nothing:999'
          : ledger.objects[entry.pick % ledger.objects.length]!.id,
      operation: entry.operation,
      reason: 'random plan',
    })),
  };
}

/** Whether a fold of the object must be accepted: unpinned, and holding nothing pinned (instructions a client sent mid-way). */
function isRemovable(ledger: Ledger, object: LedgerObject): boolean {
  const holdsPinned = ledger.objects.some(
    (other) =>
      other !== object &&
      other.pinned &&
      other.messageIndex >= object.span.start &&
      other.messageIndex < object.span.end,
  );
  return (
    !object.pinned &&
    !holdsPinned &&
    object.kind !== 'system' &&
    object.span.end <= latestTurnStart(ledger) &&
    object.span.end < ledger.messages.length
  );
}

/** Every problem with tool-call pairing in a view, as readable strings. */
function pairingProblems(view: readonly Message[], transcript: readonly Message[]): string[] {
  const answeredInTranscript = new Set<string>();
  for (const message of transcript) {
    for (const part of message.parts) if (part.type === 'tool-result') answeredInTranscript.add(part.callId);
  }
  const problems: string[] = [];
  const callsSeen = new Set<string>();
  const resultsSeen = new Set<string>();
  view.forEach((message, position) => {
    // A server tool use and its result (opaque parts, not calls) stay side by side in one message.
    message.parts.forEach((part, partIndex) => {
      const next = message.parts[partIndex + 1];
      if (
        part.type === 'opaque' &&
        part.kind === 'server_tool_use' &&
        !(next?.type === 'opaque' && next.kind === 'web_search_tool_result')
      )
        problems.push(`server tool use without its result at ${position}`);
      if (
        part.type === 'opaque' &&
        part.kind === 'web_search_tool_result' &&
        message.parts[partIndex - 1]?.type !== 'opaque'
      )
        problems.push(`server tool result without its use at ${position}`);
    });
    for (const part of message.parts) {
      if (part.type === 'tool-call') {
        if (message.role !== 'assistant') problems.push(`call ${part.id} in a ${message.role} message`);
        callsSeen.add(part.id);
      }
      if (part.type === 'tool-result') {
        if (!callsSeen.has(part.callId)) problems.push(`orphaned result ${part.callId} at ${position}`);
        resultsSeen.add(part.callId);
      }
    }
  });
  for (const id of callsSeen) {
    if (!resultsSeen.has(id) && answeredInTranscript.has(id)) problems.push(`call ${id} lost its result`);
  }
  return problems;
}

/**
 * A payload holds its object's own content: a tool result's part, the whole user message of an
 * output a client sent as one, a conversation's messages.
 */
function expectPayloadOf(payload: ObjectPayload, messages: readonly Message[], object: LedgerObject): void {
  if (payload.kind !== 'function')
    expect(payload.messages).toEqual(messages.slice(object.span.start, object.span.end));
  else if (object.partIndex === undefined) {
    expect(payload.message).toEqual(messages[object.messageIndex]);
    expect(payload.part).toBeUndefined();
  } else {
    expect(payload.message).toBeUndefined();
    expect(payload.part).toEqual(messages[object.messageIndex]?.parts[object.partIndex]);
  }
}

describe('fold, mask and expand round-trip byte for byte', () => {
  it('the sidecar payload of any object comes back identical through JSON text', () => {
    fc.assert(
      fc.property(transcriptArbitrary(), (messages) => {
        const ledger = index(messages);
        for (const object of ledger.objects) {
          const stored = JSON.stringify(objectPayload(ledger, object));
          const payload = parseObjectPayload(stored, 'property');
          expectPayloadOf(payload, messages, object);
          expect(JSON.stringify(payload)).toBe(stored);
        }
      }),
      RUNS,
    );
  });

  it('expand after fold or mask gives the original view back', () => {
    fc.assert(
      fc.property(
        transcriptArbitrary(),
        fc.constantFrom('fold' as const, 'mask' as const),
        (messages, kind) => {
          const ledger = index(messages);
          const original = projectView(ledger, {});
          expect(original.items.map((item) => item.message)).toEqual(messages);
          for (const object of ledger.objects) {
            const removed = rehearsePlan(
              ledger,
              {},
              { planner: 'p', operations: [{ objectId: object.id, operation: kind, reason: 'p' }] },
            );
            if (kind === 'fold' && isRemovable(ledger, object)) expect(removed.accepted).toHaveLength(1);
            if (removed.accepted.length === 0) continue;
            expect(removed.tokensAfter).toBe(projectView(ledger, removed.stateAfter).tokens);
            const expanded = rehearsePlan(ledger, removed.stateAfter, {
              planner: 'p',
              operations: [{ objectId: object.id, operation: 'expand', reason: 'p' }],
            });
            expect(expanded.stateAfter).toEqual({});
            const view = projectView(ledger, expanded.stateAfter);
            expect(view.items.map((item) => item.message)).toEqual(messages);
            view.items.forEach((item, position) => {
              expect(item.message).toBe(messages[position]);
            });
            expect(view.tokens).toBe(original.tokens);
          }
        },
      ),
      RUNS,
    );
  });

  it('a committed fold is stored in the sidecar exactly', async () => {
    await fc.assert(
      fc.asyncProperty(transcriptArbitrary(), fc.nat(), async (messages, pick) => {
        const ledger = index(messages);
        const candidates = ledger.objects.filter((object) => isRemovable(ledger, object));
        fc.pre(candidates.length > 0);
        const object = candidates[pick % candidates.length]!;
        const store = createMemoryStore();
        const snapshot = await readSessionState(store, 's');
        const rehearsal = rehearsePlan(ledger, snapshot.state.objects, {
          planner: 'p',
          operations: [{ objectId: object.id, operation: 'fold', reason: 'p' }],
        });
        const outcome = await commitRehearsal(
          { store, sessionId: 's', now: () => 1 },
          ledger,
          snapshot,
          rehearsal,
        );
        if (outcome.status !== 'committed') throw new Error(outcome.status);
        const record = await store.getPayload('s', payloadKey(object.id, outcome.state.payloads[object.id]!));
        expect(record?.payload).toBe(JSON.stringify(objectPayload(ledger, object)));
        expectPayloadOf(parseObjectPayload(record?.payload ?? '', 'sidecar'), messages, object);
      }),
      { numRuns: 60 },
    );
  });
});

describe('views stay valid for any plan', () => {
  it('no orphaned tool result and no call without its result, after any sequence of random plans', () => {
    fc.assert(
      fc.property(
        transcriptArbitrary({ unansweredLastCall: true }),
        fc.array(fc.tuple(planShape, fc.boolean()), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        (messages, plans, showIds) => {
          const ledger = index(messages);
          let state: ViewState = {};
          for (const [shape, tombstones] of plans) {
            const rehearsal = rehearsePlan(ledger, state, planFrom(ledger, shape), {
              tombstones,
              project: { showIds },
            });
            const view = projectView(ledger, rehearsal.stateAfter, { showIds });
            expect(
              pairingProblems(
                view.items.map((item) => item.message),
                messages,
              ),
            ).toEqual([]);
            expect(rehearsal.tokensAfter).toBe(view.tokens);
            expect(rehearsal.accepted.length + rehearsal.rejected.length).toBe(shape.length);
            // Nothing in the latest turn, and nothing pinned, ever changes.
            const protectFrom = latestTurnStart(ledger);
            for (const item of view.items) {
              if (item.source >= protectFrom && !showIds) expect(item.message).toBe(messages[item.source]);
            }
            for (const entry of rehearsal.accepted)
              expect(ledger.get(entry.operation.objectId)?.pinned).toBe(false);
            state = rehearsal.stateAfter;
          }
        },
      ),
      RUNS,
    );
  });

  it('keeps every pinned object and the latest turn in the view', () => {
    fc.assert(
      fc.property(transcriptArbitrary(), planShape, (messages, shape) => {
        // Pin more than the defaults: protected tools and rules files inside past conversations.
        const ledger = indexTranscript(messages, {
          ...ledgerOptions,
          pin: createPinRule({ tools: ['todo_write'] }),
        });
        const rehearsal = rehearsePlan(ledger, {}, planFrom(ledger, shape), { tombstones: false });
        const sources = new Set(projectView(ledger, rehearsal.stateAfter).items.map((item) => item.source));
        const view = projectView(ledger, rehearsal.stateAfter);
        for (const object of ledger.objects) {
          if (!object.pinned) continue;
          expect(sources.has(object.messageIndex)).toBe(true);
          const item = view.items.find((entry) => entry.source === object.messageIndex);
          if (object.kind === 'function' || object.kind === 'skill')
            expect(item?.message.parts).toContainEqual(
              messages[object.messageIndex]?.parts[object.partIndex ?? 0],
            );
          else expect(item?.message).toBe(messages[object.messageIndex]);
        }
        for (let position = latestTurnStart(ledger); position < messages.length; position += 1) {
          expect(sources.has(position)).toBe(true);
        }
      }),
      RUNS,
    );
  });
});

describe('ids are stable', () => {
  function snapshot(ledger: Ledger) {
    return {
      objects: JSON.stringify(ledger.objects),
      messageTokens: [...ledger.messageTokens],
      totalTokens: ledger.totalTokens,
    };
  }

  it('under re-indexing', () => {
    fc.assert(
      fc.property(transcriptArbitrary(), (messages) => {
        expect(snapshot(index(messages))).toEqual(snapshot(index(structuredClone(messages))));
      }),
      RUNS,
    );
  });

  it('under appends at arbitrary split points', () => {
    fc.assert(
      fc.property(transcriptArbitrary(), fc.array(fc.nat(), { maxLength: 6 }), (messages, cuts) => {
        const points = [...new Set(cuts.map((cut) => cut % (messages.length + 1)))].sort((a, b) => a - b);
        const ledger = createLedger(ledgerOptions);
        let from = 0;
        for (const point of [...points, messages.length]) {
          ledger.append(messages.slice(from, point));
          from = point;
        }
        expect(snapshot(ledger)).toEqual(snapshot(index(messages)));
      }),
      RUNS,
    );
  });

  it('for every prefix: the prefix has exactly the ids of the whole that it holds', () => {
    fc.assert(
      fc.property(transcriptArbitrary(), fc.nat(), (messages, cut) => {
        const end = cut % (messages.length + 1);
        const prefix = index(messages.slice(0, end));
        const whole = index(messages);
        const expected = whole.objects.filter((object) => object.messageIndex < end);
        expect(prefix.objects.map((object) => object.id)).toEqual(expected.map((object) => object.id));
        prefix.objects.forEach((object, position) => {
          expect(object.tokens).toBe(expected[position]?.tokens);
          expect(object.anchors).toEqual(expected[position]?.anchors);
        });
      }),
      RUNS,
    );
  });
});

/** A memory store whose writes can be made to fail. */
function failingStore(fail: 'putPayloads' | 'writeCommit' | 'none'): SidecarStore {
  const store = createMemoryStore();
  return {
    ...store,
    kind: store.kind,
    putPayloads: (records) =>
      fail === 'putPayloads'
        ? Promise.reject(new StoreError('injected: disk full'))
        : store.putPayloads(records),
    writeCommit: (sessionId, commit, state, expectedVersion) =>
      fail === 'writeCommit'
        ? Promise.reject(new StoreError('injected: connection lost'))
        : store.writeCommit(sessionId, commit, state, expectedVersion),
  };
}

describe('commits', () => {
  it('committing the same rehearsal twice gives committed, then duplicate, with the same state', async () => {
    await fc.assert(
      fc.asyncProperty(transcriptArbitrary(), planShape, async (messages, shape) => {
        const ledger = index(messages);
        const store = createMemoryStore();
        const snapshot = await readSessionState(store, 's');
        const rehearsal = rehearsePlan(ledger, snapshot.state.objects, planFrom(ledger, shape));
        fc.pre(rehearsal.accepted.length > 0);
        const context = { store, sessionId: 's', now: () => 1_000 };
        const first = await commitRehearsal(context, ledger, snapshot, rehearsal);
        const afterFirst = await readSessionState(store, 's');
        const second = await commitRehearsal(context, ledger, snapshot, rehearsal);
        expect(first.status).toBe('committed');
        expect(second.status).toBe('duplicate');
        if (first.status !== 'committed' || second.status !== 'duplicate') return;
        expect(second.state).toEqual(first.state);
        expect(second.version).toBe(first.version);
        expect(await readSessionState(store, 's')).toEqual(afterFirst);
        expect(await store.listCommits('s')).toHaveLength(1);
        expect(projectView(ledger, first.state.objects).tokens).toBe(rehearsal.tokensAfter);
      }),
      { numRuns: 80 },
    );
  });

  it('an injected store failure leaves the session state and commit log as they were', async () => {
    await fc.assert(
      fc.asyncProperty(
        transcriptArbitrary(),
        planShape,
        planShape,
        fc.constantFrom('putPayloads' as const, 'writeCommit' as const),
        async (messages, firstShape, secondShape, failure) => {
          const ledger = index(messages);
          const healthy = failingStore('none');
          const context = { store: healthy, sessionId: 's', now: () => 5 };
          // A first, successful commit so that "as it was" is not just "empty".
          const initial = await readSessionState(healthy, 's');
          const first = rehearsePlan(ledger, initial.state.objects, planFrom(ledger, firstShape));
          await commitRehearsal(context, ledger, initial, first);
          const before = await readSessionState(healthy, 's');
          const commitsBefore = await healthy.listCommits('s');
          const second = rehearsePlan(ledger, before.state.objects, planFrom(ledger, secondShape), {
            tombstones: false,
          });
          // An expand-only commit writes no payloads: only a write it makes can fail.
          fc.pre(second.accepted.some((entry) => failure === 'writeCommit' || entry.state !== undefined));
          // The failing store shares the healthy store's data: same methods, two writes swapped out.
          const broken: SidecarStore = {
            ...healthy,
            putPayloads: (records) =>
              failure === 'putPayloads'
                ? Promise.reject(new StoreError('injected'))
                : healthy.putPayloads(records),
            writeCommit: (...args) =>
              failure === 'writeCommit'
                ? Promise.reject(new StoreError('injected'))
                : healthy.writeCommit(...args),
          };
          await expect(
            commitRehearsal({ ...context, store: broken }, ledger, before, second),
          ).rejects.toThrow(StoreError);
          expect(await readSessionState(healthy, 's')).toEqual(before);
          expect(await healthy.listCommits('s')).toEqual(commitsBefore);
          expect(projectView(ledger, (await readSessionState(healthy, 's')).state.objects)).toEqual(
            projectView(ledger, before.state.objects),
          );
          // Once the store recovers, the same commit goes through.
          const retried = await commitRehearsal(context, ledger, before, second);
          expect(retried.status).toBe('committed');
        },
      ),
      { numRuns: 80 },
    );
  });

  it('a store that fails from the start leaves no session behind', async () => {
    const messages: Message[] = [
      { role: 'user', parts: [{ type: 'text', text: 'first' }] },
      { role: 'user', parts: [{ type: 'text', text: 'second request with src/app.ts' }] },
      { role: 'assistant', parts: [{ type: 'text', text: 'ok' }] },
      { role: 'user', parts: [{ type: 'text', text: 'third' }] },
      { role: 'assistant', parts: [{ type: 'text', text: 'ok' }] },
    ];
    const ledger = index(messages);
    for (const failure of ['putPayloads', 'writeCommit'] as const) {
      const store = failingStore(failure);
      const snapshot = await readSessionState(store, 's');
      const rehearsal = rehearsePlan(ledger, snapshot.state.objects, {
        planner: 'p',
        operations: [{ objectId: 'conversation:user:2', operation: 'fold', reason: 'p' }],
      });
      await expect(commitRehearsal({ store, sessionId: 's' }, ledger, snapshot, rehearsal)).rejects.toThrow(
        /injected/,
      );
      expect(await store.readSession('s')).toBeUndefined();
      expect(await store.listCommits('s')).toEqual([]);
    }
  });
});
