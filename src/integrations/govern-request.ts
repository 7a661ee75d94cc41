/**
 * The step every integration shares: read the request's messages into the canonical transcript,
 * ask the governor for the view of the session, write the view back in the request's own format.
 * The caller hears about every request through `onGovern`, and chooses whether a request that
 * cannot be governed fails (the default) or goes out as written.
 */
import { type SelfGcError, toSelfGcError } from '../core/errors.js';
import type { Governor, ProjectResult } from '../core/governor/governor-types.js';
import type { Message, Warning } from '../core/transcript.js';
import { AGENT_MODE } from '../core/tuning.js';
import type { AgentTools } from './agent-tools.js';

/** What happened to one request. */
export type GovernEvent =
  /** The view was sent; `warnings` joins the adapters' and the governor's. */
  | { status: 'governed'; sessionId: string; result: ProjectResult; warnings: Warning[] }
  /** `failOpen` was set and governance failed: the request went out as written. */
  | { status: 'ungoverned'; sessionId: string; error: SelfGcError };

/** Options shared by the AI SDK middleware and the SDK client wrappers. */
export interface GovernOptions<Request> {
  governor: Governor;
  /**
   * The session a request belongs to: a fixed id, or one read from the request (a user id in
   * the metadata, a conversation id in a header, …). Sessions never see each other's sidecars.
   */
  sessionId: string | ((request: Request) => string);
  /** Called once per request, for logs and metrics (commits, tokens before and after, warnings). */
  onGovern?: (event: GovernEvent) => void;
  /**
   * When a request cannot be governed (a message the adapters cannot read, a failing store):
   * throw (false, the default: the window guarantee would not hold) or send it as written.
   */
  failOpen?: boolean;
  /**
   * The agent-driven mode (`createAgentTools`): requests also carry the GC tools and end with the
   * context ledger; route the model's GC calls to `agentTools.handler`.
   */
  agentTools?: AgentTools;
}

/** How one integration reads its request's messages and writes a view back. */
export interface RequestCodec<Request, Written> {
  read(request: Request): { messages: Message[]; warnings: Warning[] };
  write(view: Message[], request: Request): { value: Written; warnings: Warning[] };
  /** The written request with the GC tools added in its provider's format (agent-driven mode). */
  withGcTools?(value: Written): Written;
}

/**
 * The governed form of `request`'s messages, or undefined when governance failed and
 * `failOpen` is set (the caller then sends the request unchanged).
 *
 * @throws SelfGcError (a BadInputError for unreadable messages) unless `failOpen` is set; an
 *   aborted request always throws.
 */
export async function governRequest<Request, Written>(
  options: GovernOptions<Request>,
  request: Request,
  codec: RequestCodec<Request, Written>,
  signal?: AbortSignal,
): Promise<Written | undefined> {
  const sessionId = typeof options.sessionId === 'function' ? options.sessionId(request) : options.sessionId;
  let event: GovernEvent;
  let written: Written | undefined;
  try {
    const read = codec.read(request);
    const agent = options.agentTools;
    const result = await options.governor.project(sessionId, read.messages, {
      ...(signal ? { signal } : {}),
      // The ledger goes into the same request: its room is kept free.
      ...(agent
        ? {
            reservedTokens: AGENT_MODE.ledgerMessageTokens,
            ledgerMessage: { maxTokens: AGENT_MODE.ledgerMessageTokens },
          }
        : {}),
    });
    // The ledger goes last: the prefix before it is the one the provider cached.
    const view = codec.write(
      result.ledgerMessage ? [...result.view, result.ledgerMessage] : result.view,
      request,
    );
    written = agent && codec.withGcTools ? codec.withGcTools(view.value) : view.value;
    agent?.remember(sessionId, read.messages);
    event = {
      status: 'governed',
      sessionId,
      result,
      warnings: [...read.warnings, ...result.warnings, ...view.warnings],
    };
  } catch (error) {
    const failure = toSelfGcError(error);
    if (options.failOpen !== true || signal?.aborted === true) throw failure;
    event = { status: 'ungoverned', sessionId, error: failure };
  }
  options.onGovern?.(event);
  return written;
}
