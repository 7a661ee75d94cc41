/**
 * The governor: the one call an agent loop (or the proxy) makes before each model call.
 * It indexes the transcript, decides whether governance should run, asks a planner, rehearses,
 * weighs the cache, commits, and returns the view that fits the window.
 */
import type { OperationKind, Plan, RejectionReason } from '../operations.js';
import type { Planner } from '../planners/planner.js';
import type { CommitRecord, SidecarStore } from '../store.js';
import type { TokenCounter } from '../tokens.js';
import type { Message, Warning } from '../transcript.js';
import type { EntryModel } from '../valuator/entry-model.js';
import type { CachePricing } from './cache-cost.js';

/** When governance runs. All fractions are of the window. */
export interface TriggerOptions {
  /** Plan once the view passes this share of the window (default 0.7). */
  softPressure?: number;
  /** Aim for this share of the window after a commit (default 0.4). */
  target?: number;
  /** Run on milestones: a new user request, a todo or plan item marked done (default true). */
  milestones?: boolean;
  /** Also run every N new messages regardless of pressure (default off). */
  periodicMessages?: number;
  /** A commit that frees less than this share of the window waits for more (default 0.05), unless the view overflows. */
  minBatch?: number;
  /**
   * When the planner cannot reach the target, go on with the fallback (old steps leave) in the
   * same commit: fewer, deeper cache breaks and smaller views (default true).
   */
  deep?: boolean;
  /** At least this many new messages between two runs (default 4). */
  cooldownMessages?: number;
  /** After this many runs in a row that freed nothing, stop trying until the transcript grows by a cooldown (default 3). */
  breakerRuns?: number;
}

/** Pins beyond the defaults (system prompt, first user request). */
export interface PinOptions {
  /** Tool names whose results are never touched. */
  tools?: string[];
  /** Globs of paths: a tool result whose call names a matching path is pinned. */
  paths?: string[];
  /** Pin rules files (AGENTS.md, CLAUDE.md, .cursorrules, ...) when read (default true). */
  rulesFiles?: boolean;
  /** Pin user turns that state constraints (must / never / don't ...) (default true). */
  userConstraints?: boolean;
}

/**
 * When a rehearsed plan commits. `cost`: when the tokens it frees, priced over the calls still to
 * come, save more than breaking the cache and the planner's call cost. `paper` (the published
 * Self-GC's rule): at once when it frees at least `PAPER_COMMIT_SHARE` of the view, otherwise at
 * the next governance run. Either way a deferred plan may be held pending (`pending-plan.ts`).
 */
export type CommitPolicy = 'cost' | 'paper';

export interface GovernorOptions {
  provider: 'openai' | 'anthropic';
  /** Context window in tokens. */
  window: number;
  store: SidecarStore;
  /** Default: the embedded offline planner. */
  planner?: Planner;
  tokenCounter?: TokenCounter;
  pins?: PinOptions;
  triggers?: TriggerOptions;
  /** Cache-aware commit (default) or cache-blind (commit whenever a plan frees tokens). */
  cache?: 'aware' | 'blind' | CachePricing;
  /** How a cache-aware governor decides to commit (default `cost`). */
  commitPolicy?: CommitPolicy;
  /** Show ids as light metadata in the view (needed when the agent has GC tools). Default false. */
  showIds?: boolean;
  /**
   * The valuator model: fold indexes list each message's entries by its future-use score
   * (`selfgc train` fits one on a user's own sessions). Default `defaultEntryModel()`, the one
   * fitted on the recorded sessions the project evaluates on; `'none'`: entries by the
   * extractor's kind.
   */
  entryModel?: EntryModel | 'none';
  /** Injected clock. */
  now?: () => number;
}

/** What `project` returns. */
export interface ProjectResult {
  /** The canonical messages to send. */
  view: Message[];
  /** Tokens of the full transcript and of the view. */
  transcriptTokens: number;
  viewTokens: number;
  /** The last commit made by this call, if any. */
  commit?: CommitRecord;
  /**
   * Every commit made by this call, in order: usually none or one; a window rescue after a
   * planner's commit adds another.
   */
  commits: CommitRecord[];
  /** Why governance did or did not run, for logs and headers. */
  decision: GovernanceDecision;
  warnings: Warning[];
  /**
   * What the view can recover: the key each recovery pointer shows (`function:read_file:12`,
   * `conversation:user:1@57`) → its sidecar key. Pass it as `scope` to `expand` and
   * `searchContext` to recover for exactly this view, whatever the session's stored state has
   * become since.
   */
  recoverable: Readonly<Record<string, string>>;
  /**
   * Set when the transcript is not an append to the one governed before (an edit, a
   * truncation, another conversation under the same session id): where they part, and the
   * object states that stopped applying.
   */
  divergence?: { at: number; dropped: string[] };
  /**
   * Set when the call decided on bounds (`deferCounting`) and found nothing to do:
   * `transcriptTokens` and `viewTokens` are then at least the counts, never below, and `settle`
   * counts the messages this call appended, for the next call to know them (run it once the
   * view is on its way; a call that needs counts makes them itself).
   */
  settle?: () => void;
  /**
   * Work for the session's next call that need not delay this one (the valuator's statistics of
   * the messages this call appended): run it once the view is on its way.
   */
  afterSend?: () => void;
  /**
   * With `ProjectCallOptions.ledgerMessage`: the context ledger of the view as returned (objects,
   * states, `budget_used_pct`), for an agent that governs itself; it goes after the view.
   */
  ledgerMessage?: Message;
}

/** Options of one `project` call. */
export interface ProjectCallOptions {
  signal?: AbortSignal;
  /** Govern even when no trigger fired. */
  force?: boolean;
  /**
   * Tokens the request needs besides its messages — tool definitions, the output reserve — so
   * the view must fit in `window − reservedTokens` (default 0).
   */
  reservedTokens?: number;
  /**
   * `transcriptChain(messages)`, when the caller keeps it between calls (the proxy's transcript
   * cache hashes only what a request adds); a chain of another length is ignored and computed.
   */
  chain?: readonly string[];
  /**
   * Decide on the counter's `bound` (`TokenCounter.bound`) for the messages this call appends
   * to the transcript the governor indexed before, and count them before the view is returned
   * only when a trigger may fire on the bounds: with the window far, the view goes out without
   * counting them (see `ProjectResult.settle`). A transcript indexed anew is counted.
   */
  deferCounting?: boolean;
  /**
   * Render the ledger message of the returned view (agent-driven mode), in at most `maxTokens`
   * tokens (the largest objects first): reserve that much in `reservedTokens`, since the message
   * goes into the same request. `toolPrefix`: what the GC tools' names start with where they are
   * offered (the proxy's are `selfgc_fold`, …).
   */
  ledgerMessage?: { maxTokens: number; toolPrefix?: string };
}

/** Recovery keys → sidecar keys (`ProjectResult.recoverable`). */
export type RecoveryScope = Readonly<Record<string, string>>;

export interface GovernanceDecision {
  /** The trigger that fired, or `none`. */
  trigger: 'pressure' | 'milestone' | 'periodic' | 'request' | 'overflow' | 'none';
  /**
   * What happened: committed, deferred by the cache rule, nothing to do, breaker open, ...;
   * `below-break-even`: soft pressure did not run, since the last run's deferred plan lacked more
   * than the view has grown since (`TriggerBookkeeping.deferral`).
   */
  outcome:
    | 'committed'
    | 'deferred'
    | 'nothing-to-free'
    | 'cooldown'
    | 'breaker-open'
    | 'below-break-even'
    | 'below-threshold'
    | 'fallback';
  /** The cache rule's numbers when it was consulted. */
  cache?: { saving: number; breakCost: number; gcCost: number };
  /**
   * A plan held pending (`since`: the transcript length it was planned at): `held` when this run
   * deferred its plan and holds it, `committed` when this run committed a plan held before,
   * `dropped` when it dropped one (a `pending-plan-dropped` warning says why).
   */
  pending?: { since: number; status: 'held' | 'committed' | 'dropped' };
}

export interface Governor {
  /**
   * Project the view for the next model call of `sessionId`. `messages` is the full transcript
   * so far (the governor never edits it). State is read from and written to the store.
   */
  project(
    sessionId: string,
    messages: readonly Message[],
    options?: ProjectCallOptions,
  ): Promise<ProjectResult>;
  /**
   * The exact payload behind a recovery pointer (`function:read_file:12`,
   * `conversation:user:1@57`), as stored in the sidecar: for the view `scope` describes, or for
   * the session's stored state when there is no scope. Undefined when that view cannot recover it.
   */
  expand(sessionId: string, key: string, scope?: RecoveryScope): Promise<string | undefined>;
  /** Full-text search over what the view `scope` (or the stored state) can recover. */
  searchContext(
    sessionId: string,
    query: string,
    limit?: number,
    scope?: RecoveryScope,
  ): Promise<Array<{ objectId: string; snippet: string }>>;
  /**
   * Rehearse and commit a plan the agent proposed through its GC tools, against the transcript
   * `messages` (the latest turn — the one calling the tool — stays protected). Refusals are
   * returned, not thrown.
   */
  applyAgentPlan(sessionId: string, messages: readonly Message[], plan: Plan): Promise<AgentPlanResult>;
}

/** What `applyAgentPlan` did with the agent's plan. */
export interface AgentPlanResult {
  /**
   * Operations the harness accepted, with the object's view tokens before and after, and the key
   * `expand` recovers it by (the object id, tagged once the session's keys are: `foldKey`).
   */
  accepted: Array<{
    objectId: string;
    operation: OperationKind;
    tokensBefore: number;
    tokensAfter: number;
    key: string;
  }>;
  /** Operations it refused, and why. */
  rejected: Array<{ objectId: string; reason: RejectionReason; detail: string }>;
  /** The commit, when one was written. */
  commit?: CommitRecord;
  warnings: Warning[];
}
