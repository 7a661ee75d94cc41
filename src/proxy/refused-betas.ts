/**
 * The betas the proxy adds that an upstream refused (a platform that does not know them), per
 * namespace (a key's hash, or a tenant): the namespace's later requests go without them at once,
 * instead of being refused first and sent again (`handle-governed.ts`). A request refused for the
 * want of one takes it back. Kept in this process, for the latest `limit` namespaces.
 */
export interface RefusedBetas {
  of(scope: string): readonly string[];
  note(scope: string, beta: string): void;
  forget(scope: string, beta: string): void;
}

export const REFUSED_BETAS_LIMIT = 10_000;

export function createRefusedBetas(limit = REFUSED_BETAS_LIMIT): RefusedBetas {
  const refused = new Map<string, readonly string[]>();
  const set = (scope: string, betas: readonly string[]) => {
    refused.delete(scope);
    if (betas.length === 0) return;
    refused.set(scope, betas);
    if (refused.size > limit) refused.delete(refused.keys().next().value!);
  };
  return {
    of: (scope) => refused.get(scope) ?? [],
    note(scope, beta) {
      const betas = refused.get(scope) ?? [];
      set(scope, betas.includes(beta) ? betas : [...betas, beta]);
    },
    forget(scope, beta) {
      if (refused.has(scope))
        set(
          scope,
          refused.get(scope)!.filter((value) => value !== beta),
        );
    },
  };
}
