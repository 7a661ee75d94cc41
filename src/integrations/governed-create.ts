/**
 * What the OpenAI and Anthropic wrappers share: a `create` that governs its body first, and a
 * promise with the SDK's `APIPromise` helpers.
 */
import { type GovernOptions, governRequest, type RequestCodec } from './govern-request.js';

/** The helpers both SDKs' `APIPromise` add to a promise (`_thenUnwrap` is what `parse` uses). */
interface SdkPromise<T> extends PromiseLike<T> {
  withResponse(): Promise<unknown>;
  asResponse(): Promise<Response>;
  _thenUnwrap(transform: (data: T, props: unknown) => unknown): SdkPromise<unknown>;
}

/** The request options both SDKs accept as the second argument; only `signal` is read. */
interface RequestOptions {
  signal?: AbortSignal | null | undefined;
}

/** A method of an SDK resource that sends a body: `create`, `countTokens`, `inputTokens.count`. */
export type Send<Body> = (body: Body, options?: RequestOptions) => SdkPromise<unknown>;

/**
 * `send` with governance in front: the body's messages become the session's view, then the
 * SDK sends the request as usual (streaming, retries, errors and all). The result awaits like
 * the SDK's own and keeps `withResponse()`, `asResponse()` and `_thenUnwrap()`.
 */
export function governCreate<Body>(
  send: Send<Body>,
  options: GovernOptions<Body>,
  codec: RequestCodec<Body, Body>,
): Send<Body> {
  return (body, requestOptions) =>
    new DeferredApiPromise(
      governRequest(options, body, codec, requestOptions?.signal ?? undefined).then((governed) => ({
        promise: send(governed ?? body, requestOptions),
      })),
    );
}

type Sent = Promise<{ promise: SdkPromise<unknown> }>;

/**
 * The SDK promise of a request being governed, with its helpers. Like the SDK's own
 * `APIPromise`, the answer is parsed only when awaited: `parse()` helpers call `_thenUnwrap`
 * instead, and a body can be read once.
 */
class DeferredApiPromise extends Promise<unknown> implements SdkPromise<unknown> {
  // Boxed: a thenable returned from `then` would be adopted, and its helpers lost.
  readonly #sent: Sent;
  #data: Promise<unknown> | undefined;

  constructor(sent: Sent) {
    super((resolve) => resolve(null));
    this.#sent = sent;
    // A caller that only uses `withResponse()` must not leave a rejection unhandled.
    sent.catch(() => undefined);
  }

  #parse(): Promise<unknown> {
    this.#data ??= this.#sent.then(({ promise }) => promise);
    return this.#data;
  }

  // biome-ignore lint/suspicious/noThenProperty: a promise that parses only when awaited, like the SDK's own.
  override then<Fulfilled = unknown, Rejected = never>(
    onfulfilled?: ((value: unknown) => Fulfilled | PromiseLike<Fulfilled>) | null,
    onrejected?: ((reason: unknown) => Rejected | PromiseLike<Rejected>) | null,
  ): Promise<Fulfilled | Rejected> {
    return this.#parse().then(onfulfilled, onrejected);
  }

  override catch<Rejected = never>(
    onrejected?: ((reason: unknown) => Rejected | PromiseLike<Rejected>) | null,
  ): Promise<unknown> {
    return this.#parse().catch(onrejected);
  }

  override finally(onfinally?: (() => void) | null): Promise<unknown> {
    return this.#parse().finally(onfinally);
  }

  withResponse(): Promise<unknown> {
    return this.#sent.then(({ promise }) => promise.withResponse());
  }

  asResponse(): Promise<Response> {
    return this.#sent.then(({ promise }) => promise.asResponse());
  }

  _thenUnwrap(transform: (data: unknown, props: unknown) => unknown): SdkPromise<unknown> {
    return new DeferredApiPromise(
      this.#sent.then(({ promise }) => ({ promise: promise._thenUnwrap(transform) })),
    );
  }
}
