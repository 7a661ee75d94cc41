import type { Planner, PlannerCost } from '../planners/planner.js';

/**
 * A planner that folds the given objects and reports `cost`, counting its calls: for tests of
 * what the governor does with a plan (hold it, commit it, ask again).
 */
export function countingPlanner(ids: readonly string[], cost?: PlannerCost) {
  let calls = 0;
  const planner: Planner = {
    name: 'llm',
    plan: async () => {
      calls += 1;
      return {
        plan: {
          planner: 'llm',
          operations: ids.map((objectId) => ({
            objectId,
            operation: 'fold' as const,
            reason: 'read long ago',
          })),
        },
        ...(cost ? { cost } : {}),
      };
    },
  };
  return { planner, calls: () => calls };
}
