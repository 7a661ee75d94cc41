/**
 * The step every integration shares: read the request's messages into the canonical transcript,
 * ask the governor for the view of the session, write the view back in the request's own format.
 * The caller hears about every request through `onGovern`, and chooses whether a request that
 * cannot be governed fails (the default) or goes out as written.
 */
import { type SelfGcError, toSelfGcError } from '../core/errors.js';
import type { Governor, ProjectResult } from '../core/governor/governor-types.js';
import type { Message, Warning } from '../core/transcript.js';

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
}

/** How one integration reads its request's messages and writes a view back. */
export interface RequestCodec<Request, Written> {
  read(request: Request): { messages: Message[]; warnings: Warning[] };
  write(view: Message[], request: Request): { value: Written; warnings: Warning[] };
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
    const result = await options.governor.project(sessionId, read.messages, signal ? { signal } : {});
    const view = codec.write(result.view, request);
    written = view.value;
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
