/**
 * A governed view of an SDK client, described as a tree: which members of which nested objects
 * are replaced, and which objects are SDK resources whose own helpers must see the governed
 * client. Everything else is the client's own. The original client is left untouched.
 */
import { UngovernedCallError } from './ungoverned-call-error.js';

/** How one object of the client reads in the governed view. */
export interface ClientOverlay {
  /** Members made anew, once, from the real object (`owner`). */
  replace?: Record<string, (owner: object) => unknown>;
  /** Nested objects with overlays of their own. */
  nested?: Record<string, ClientOverlay>;
  /**
   * An SDK resource whose helpers (`stream`, `parse`, `runTools`, …) send through `this.create`
   * or `this._client.<resource>.create`: its methods run on the overlay and its `_client` is
   * the governed client, so those sends are governed too.
   */
  resource?: boolean;
}

/** Options of `overlayClient`. */
export interface OverlayClientOptions {
  /**
   * Paths of the endpoints that take a conversation (`/chat/completions`, `/v1/messages`): a raw
   * `post` or `request` to one of them through the governed client is refused, whether the
   * caller or an SDK helper given the governed client makes it.
   */
  conversationPaths: readonly string[];
  /** Root members made anew (`withOptions` returning a governed client, …). */
  replace?: Record<string, (owner: object) => unknown>;
}

type Method = (...args: unknown[]) => unknown;

interface RequestShape {
  method?: unknown;
  path?: unknown;
}

/** `client` with `overlay` applied, and raw sends to conversation endpoints refused. */
export function overlayClient<Client extends object>(
  client: Client,
  overlay: ClientOverlay,
  options: OverlayClientOptions,
): Client {
  const paths = new Set(options.conversationPaths);
  const refuseConversation = (call: string, method: unknown, path: unknown) => {
    if (String(method).toLowerCase() === 'post' && typeof path === 'string' && paths.has(path)) {
      throw new UngovernedCallError(
        `${call} ${path}`,
        'a raw request to a model endpoint skips the governed methods',
      );
    }
  };
  const guards: Record<string, (owner: object) => unknown> = {
    post:
      (owner) =>
      (path: unknown, ...rest: unknown[]) => {
        refuseConversation('post', 'post', path);
        return Reflect.apply(Reflect.get(owner, 'post') as Method, owner, [path, ...rest]);
      },
    request:
      (owner) =>
      (request: unknown, ...rest: unknown[]) => {
        const check = (value: unknown) => {
          const shape = (typeof value === 'object' && value !== null ? value : {}) as RequestShape;
          refuseConversation('request', shape.method, shape.path);
          return value;
        };
        const checked = request instanceof Promise ? request.then(check) : check(request);
        return Reflect.apply(Reflect.get(owner, 'request') as Method, owner, [checked, ...rest]);
      },
  };
  const root: Client = overlayObject(
    client,
    { ...overlay, replace: { ...guards, ...options.replace, ...overlay.replace } },
    () => root,
  );
  return root;
}

function overlayObject<T extends object>(target: T, overlay: ClientOverlay, root: () => object): T {
  const cache = new Map<PropertyKey, unknown>();
  const proxy: T = new Proxy(target, {
    get(object, property) {
      if (cache.has(property)) return cache.get(property);
      const member = memberOf(object, property);
      // Replaced members, nested overlays and methods are cached: fields must stay live.
      if (member.cached) cache.set(property, member.value);
      return member.value;
    },
  });

  function memberOf(object: T, property: PropertyKey): { value: unknown; cached: boolean } {
    const name = typeof property === 'string' ? property : undefined;
    const replace = name === undefined ? undefined : overlay.replace?.[name];
    if (replace) return { value: replace(object), cached: true };
    if (overlay.resource === true && property === '_client') return { value: root(), cached: true };
    const value: unknown = Reflect.get(object, property);
    const nested = name === undefined ? undefined : overlay.nested?.[name];
    if (nested && typeof value === 'object' && value !== null) {
      return { value: overlayObject(value, nested, root), cached: true };
    }
    if (typeof value !== 'function') return { value, cached: false };
    // A resource's helpers run on the overlay; other methods on the real object, so SDK classes
    // with private fields keep working.
    return { value: value.bind(overlay.resource === true ? proxy : object), cached: true };
  }
  return proxy;
}
