/**
 * Every number the governance loop is tuned by, in one place, each with its reason. What is
 * learned (the valuator's weights) lives in its model file, not here. Options of the governor and
 * of the embedded planner default to these; `selfgc eval` measures what they give (the results
 * files the README links to).
 */

/** When governance runs and how far a commit goes, as shares of the room for the view. */
export const GOVERNOR = {
  /** Above this share of the window a run plans: early enough that a commit can wait for a cheap moment. */
  softPressure: 0.7,
  /** A commit aims for this share: deep enough that the next commit is many calls away. */
  target: 0.4,
  /** A commit freeing less than this share waits for more, unless the view overflows: each commit breaks the cache. */
  minBatch: 0.05,
  /** The least room a view is given when tools and the output reserve take nearly all the window. */
  minViewTokens: 1_024,
  /** A span fold's index takes at most this share of the window: room for the names a long stretch of work used, the recent steps beside it. */
  spanIndexShare: 1 / 3,
  /** And never less than this many tokens: below it an index cannot name the files it covers. */
  spanIndexMinTokens: 200,
  /** Calls a commit saves on at least and at most: a session is assumed half done. */
  futureCalls: { min: 4, max: 40 },
} as const;

/** The deep reduction that takes a planner's plan down to the target in one commit. */
export const DEEP_REDUCTION = {
  /** Rounds of "plan again on what was measured" after the planner's rehearsal. */
  rounds: 6,
  /** Of those, the first rounds keep the latest steps whole (they tell the agent where it is). */
  roundsKeepingRecent: 2,
  /** The steps those rounds keep. */
  keepSteps: 3,
  /** Passes of the index shrink, each measured by rehearsal. */
  shrinkPasses: 4,
  /** An index shrink keeps at most this share of what the overflow leaves: a margin for uneven text. */
  shrinkMargin: 0.9,
  /** Indexes regrow into the room a typical step leaves free: the median of this many latest steps. */
  headroomSteps: 5,
} as const;

/** Triggers beside pressure. */
export const TRIGGERS = {
  /** Messages a run waits after the last one before another runs without pressure. */
  cooldownMessages: 4,
  /** Fruitless runs in a row after which runs pause (cooldown × 4 messages). */
  breakerRuns: 3,
} as const;

/** The embedded planner's defaults. */
export const EMBEDDED_PLANNER = {
  /** The latest tool outputs kept whole: the agent is acting on them. */
  keepRecentOutputs: 1,
  /** Outputs smaller than this are not worth an operation: a replacement is about as big. */
  minTokens: 60,
  /** An output folds on its own only when its fold frees this share; else its step's span fold takes it, under one index. */
  minFoldShare: 0.9,
  /** Under pressure, the latest steps that stay out of span folds at first. */
  keepRecentSteps: 6,
  /** Outputs at least this big may mask instead of fold (logs and listings whose head and tail say enough). */
  maskMinTokens: 1_500,
  /** Outputs below this are too small to count as duplicates of each other. */
  duplicateMinTokens: 20,
  /** Estimated tokens a tombstone leaves, before rehearsal measures it. */
  tombstoneTokens: 20,
  /** Estimated tokens of a fold's header and recovery pointer. */
  foldFrameTokens: 40,
  /** Estimated tokens a mask keeps at most (head and tail). */
  maskKeepsTokens: 400,
} as const;

/** How much a fold's index may list. */
export const FOLD_INDEX = {
  /** One anchor of budget per this many tokens of payload: proportional, so a big read keeps its names. */
  tokensPerAnchor: 12,
  /** And at least this many anchors: a small output's few names are what it is recalled by. */
  minAnchors: 8,
  /**
   * A fold's index takes at most this many characters an anchor of its budget (about six tokens):
   * long names (a listing of paths) must not make the index as big as what it stands for.
   */
  charsPerAnchor: 24,
  /** What an index cut to its bound keeps of it: a margin for text of uneven density. */
  cutShare: 0.9,
} as const;

/** What a pruned object leaves. */
export const TOMBSTONE = {
  /**
   * A pruned request's tombstone names this many entries of its work, the valuator's best: a line
   * of names that tells the agent what that work touched, where a bare request said nothing of it.
   */
  requestEntries: 24,
} as const;

/** Cut-mode replay, where the keep share is a hard budget. */
export const CUT_MODE = {
  /** Plans after the first while the rehearsed view is over the budget. */
  replanRounds: 3,
  /** A span fold's index takes at most this share of the budget, as the governor's takes half its target. */
  spanIndexShare: 1 / 2,
} as const;

/** The agent-driven mode: the agent governs itself with GC tools and a ledger of its context. */
export const AGENT_MODE = {
  /** Tokens a request keeps free for the ledger message (its largest objects listed first). */
  ledgerMessageTokens: 1_200,
} as const;

/** The valuator's LLM tier: a model's hints for the objects the rules leave uncertain. */
export const HINT_TIER = {
  /** Objects asked about in one call, the largest first: the rest are the rules' alone. */
  maxObjects: 40,
  /** Characters of each object's head the model reads. */
  headChars: 160,
  /** Characters of the current request the model reads, for what the agent is doing. */
  taskChars: 400,
} as const;
