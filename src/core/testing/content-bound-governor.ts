/**
 * A governor that folds early and often under a small window, over a shared store: the tests of
 * content-bound state and recovery keys drive it through edited, swapped and replayed histories.
 */
import { createGovernor } from '../governor/create-governor.js';
import { createEmbeddedPlanner } from '../planners/embedded-planner.js';
import type { SidecarStore } from '../store.js';
import { approximateTokenCounter } from '../tokens.js';

const planner = createEmbeddedPlanner({
  keepRecentOutputs: 2,
  recentUseSteps: 2,
  idleFoldSteps: 4,
  idleWithBudget: true,
  minFoldShare: 0,
});

export function eagerGovernor(store: SidecarStore, window = 3_000) {
  return createGovernor({
    provider: 'openai',
    window,
    store,
    planner,
    tokenCounter: approximateTokenCounter,
    now: () => 1_767_225_600_000,
    triggers: { milestones: false, minBatch: 0, cooldownMessages: 2 },
  });
}
