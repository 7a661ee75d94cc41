/**
 * What the OpenAI and Anthropic wrappers share: a view of an SDK client in which one nested
 * `create` method governs its body first, and a promise with the SDK's `APIPromise` helpers.
 */
import { type GovernOptions, governRequest, type RequestCodec } from './govern-request.js';

/** The helpers both SDKs' `APIPromise` add to a promise. */
interface SdkPromise<T> extends PromiseLike<T> {
  withResponse(): Promise<unknown>;
  asResponse(): Promise<Response>;
}

/** The request options both SDKs accept as the second argument; only `signal` is read. */
interface RequestOptions {
  signal?: AbortSignal | null | undefined;
}

type Create<Body> = (body: Body, options?: RequestOptions) => SdkPromise<unknown>;

/**
 * `create` with governance in front: the body's messages become the session's view, then the
 * SDK sends the request as usual (streaming, retries, errors and all). The result awaits like
 * the SDK's own and keeps `withResponse()` and `asResponse()`.
 */
export function governCreate<Body>(
  create: Create<Body>,
  options: GovernOptions<Body>,
  codec: RequestCodec<Body, Body>,
): Create<Body> {
  return (body, requestOptions) => {
    // Boxed: a thenable returned from `then` would be adopted, and its helpers lost.
    const sent = governRequest(options, body, codec, requestOptions?.signal ?? undefined).then(
      (governed) => ({
        promise: create(governed ?? body, requestOptions),
      }),
    );
    const data = sent.then(({ promise }) => promise);
    // A caller that only uses `withResponse()` must not leave `data` as an unhandled rejection.
    data.catch(() => undefined);
    return Object.assign(data, {
      withResponse: () => sent.then(({ promise }) => promise.withResponse()),
      asResponse: () => sent.then(({ promise }) => promise.asResponse()),
    });
  };
}

/**
 * A proxy of `client` in which `client[path…][method]` is `replacement(owner)`; everything else
 * is the client's own. The original client is left untouched. Members are read from the real
 * objects and methods bound to them, so SDK classes with private fields keep working.
 */
export function replaceMethod<Client extends object>(
  client: Client,
  path: readonly string[],
  method: string,
  replacement: (owner: object) => unknown,
): Client {
  const [head, ...rest] = path;
  if (head === undefined) return overlay(client, method, () => replacement(client));
  return overlay(client, head, () => {
    const inner: unknown = Reflect.get(client, head);
    if (typeof inner !== 'object' || inner === null) throw new TypeError(`client.${head} is not an object`);
    return replaceMethod(inner, rest, method, replacement);
  });
}

function overlay<T extends object>(target: T, key: string, make: () => unknown): T {
  const cache = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, property) {
      if (cache.has(property)) return cache.get(property);
      const value: unknown = property === key ? make() : Reflect.get(object, property);
      const member = property !== key && typeof value === 'function' ? value.bind(object) : value;
      // Only the replaced member and methods are cached: fields must stay live.
      if (property === key || typeof value === 'function') cache.set(property, member);
      return member;
    },
  });
}
