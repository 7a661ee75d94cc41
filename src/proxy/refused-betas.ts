/**
 * The betas the proxy adds that an upstream refused for a model (a platform that does not know
 * them for it), per namespace (a key's hash, or a tenant): the namespace's later requests to that
 * model go without them at once, instead of being refused first and sent again
 * (`handle-governed.ts`). A request refused for the want of one takes it back. Kept in this
 * process, for the latest `limit` namespaces.
 */
import type { JsonObject } from './wire-dialect.js';

/** A beta the upstream refused for a model. */
export interface RefusedBeta {
  model: string;
  beta: string;
}

export interface RefusedBetas {
  of(scope: string): readonly RefusedBeta[];
  note(scope: string, refused: RefusedBeta): void;
  forget(scope: string, refused: RefusedBeta): void;
}

export const REFUSED_BETAS_LIMIT = 10_000;

const same = (a: RefusedBeta, b: RefusedBeta) => a.model === b.model && a.beta === b.beta;

export function createRefusedBetas(limit = REFUSED_BETAS_LIMIT): RefusedBetas {
  const refused = new Map<string, readonly RefusedBeta[]>();
  const set = (scope: string, entries: readonly RefusedBeta[]) => {
    refused.delete(scope);
    if (entries.length === 0) return;
    refused.set(scope, entries);
    if (refused.size > limit) refused.delete(refused.keys().next().value!);
  };
  return {
    of: (scope) => refused.get(scope) ?? [],
    note(scope, entry) {
      const entries = refused.get(scope) ?? [];
      set(scope, entries.some((known) => same(known, entry)) ? entries : [...entries, { ...entry }]);
    },
    forget(scope, entry) {
      const entries = refused.get(scope);
      if (entries !== undefined)
        set(
          scope,
          entries.filter((known) => !same(known, entry)),
        );
    },
  };
}

/** What a change takes (`WireDialect.afterChange`), unless its beta was refused for the body's model. */
export function unlessRefused<Change extends { beta: string }>(
  change: Change | undefined,
  refused: readonly RefusedBeta[],
  body: JsonObject,
): Change | undefined {
  if (change === undefined) return undefined;
  return refused.some((entry) => same(entry, { model: String(body.model), beta: change.beta }))
    ? undefined
    : change;
}
