import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { KEYLESS_NOTICE } from './handle-governed.js';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { namespaceOf, SESSION_HEADER } from './session-identity.js';
import { conversationBody, ROUTE_PATHS } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { EXPAND_TOOL } from './transparent-recovery.js';

let fixture: ProxyFixture | undefined;
let served: ServedProxy | undefined;
afterEach(async () => {
  await served?.close();
  await fixture?.close();
  served = undefined;
  fixture = undefined;
});

const answer = () => ({ text: 'Reading on.' });
const SHARED_NAME = 'my-session';

/** A chat request without any API key, as a client of a local model server sends it. */
function keylessPost(target: ProxyFixture, headers: Record<string, string>, turns = 8): Promise<Response> {
  return target.fetch(ROUTE_PATHS.chat, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [SESSION_HEADER]: SHARED_NAME, ...headers },
    body: JSON.stringify(conversationBody('chat', { turns })),
  });
}

/** The store session of a keyless request, as the proxy names it. */
function storeSession(headers: Record<string, string>, tenancy = {}, address?: string): string {
  return `${namespaceOf(new Headers(headers), tenancy, address).keyHash}:${SHARED_NAME}`;
}

describe('keyless requests', () => {
  it('without tenancy share one namespace, so they get no recovery, and the log says so once', async () => {
    fixture = await startProxyFixture({ script: answer });
    const first = await keylessPost(fixture, {});
    const second = await keylessPost(fixture, {});
    expect(first.status).toBe(200);
    expect(first.headers.get('x-selfgc-commit')).toBeTruthy();
    for (const request of fixture.upstream.requests) expect(request.rawBody).not.toContain(EXPAND_TOOL);
    expect(fixture.logs[0]?.notice).toBe(KEYLESS_NOTICE);
    expect(fixture.logs[1]?.notice).toBeUndefined();
    expect(second.status).toBe(200);
  });

  it('with a tenant header are kept apart, and each gets recovery over its own sidecar', async () => {
    fixture = await startProxyFixture({ script: answer, proxy: { tenancy: { header: 'x-tenant' } } });
    const alice = await keylessPost(fixture, { 'x-tenant': 'alice' });
    const bob = await keylessPost(fixture, { 'x-tenant': 'bob' }, 1);
    expect(alice.headers.get(SESSION_HEADER)).toBe(SHARED_NAME);
    expect(bob.headers.get(SESSION_HEADER)).toBe(SHARED_NAME);
    const tenancy = { header: 'x-tenant' };
    const aliceSession = storeSession({ 'x-tenant': 'alice' }, tenancy);
    const bobSession = storeSession({ 'x-tenant': 'bob' }, tenancy);
    expect(aliceSession).not.toBe(bobSession);
    expect((await fixture.store.listPayloads(aliceSession)).length).toBeGreaterThan(0);
    expect(await fixture.store.listPayloads(bobSession)).toEqual([]);
    expect(await fixture.store.listPayloads(storeSession({}))).toEqual([]);
    expect(fixture.upstream.requests[0]?.rawBody).toContain(EXPAND_TOOL);
    expect(fixture.logs.every((entry) => entry.notice === undefined)).toBe(true);
  });

  it('with a tenant header but none sent, fall back to the shared namespace without recovery', async () => {
    fixture = await startProxyFixture({ script: answer, proxy: { tenancy: { header: 'x-tenant' } } });
    await keylessPost(fixture, {});
    expect(fixture.upstream.requests[0]?.rawBody).not.toContain(EXPAND_TOOL);
    expect(fixture.logs[0]?.notice).toBe(KEYLESS_NOTICE);
  });

  it('with tenancy from the address are kept apart by the client address', async () => {
    fixture = await startProxyFixture({ script: answer, proxy: { tenancy: { fromAddress: true } } });
    served = await serveProxy(fixture.proxy, { port: 0 });
    const url = `${served.url}${ROUTE_PATHS.chat}`;
    for (const [localAddress, turns] of [
      ['127.0.0.1', 8],
      ['127.0.0.2', 1],
    ] as const) {
      const status = await postFrom(url, localAddress, JSON.stringify(conversationBody('chat', { turns })));
      expect(status).toBe(200);
    }
    const first = storeSession({}, { fromAddress: true }, '127.0.0.1');
    const second = storeSession({}, { fromAddress: true }, '127.0.0.2');
    expect(first).not.toBe(second);
    expect((await fixture.store.listPayloads(first)).length).toBeGreaterThan(0);
    expect(await fixture.store.listPayloads(second)).toEqual([]);
    expect(fixture.upstream.requests[0]?.rawBody).toContain(EXPAND_TOOL);
  });
});

describe('namespaceOf', () => {
  it('keeps the key hash of keyed requests, and joins a configured tenant to the key', () => {
    const keyed = new Headers({ authorization: 'Bearer sk-1', 'x-tenant': 't' });
    const plain = namespaceOf(keyed, undefined, '10.0.0.1');
    expect(plain.shared).toBe(false);
    expect(
      namespaceOf(new Headers({ authorization: 'Bearer sk-1' }), { header: 'x-tenant' }, undefined),
    ).toEqual(plain);
    const withTenant = namespaceOf(keyed, { header: 'x-tenant' }, undefined);
    expect(withTenant.keyHash).not.toBe(plain.keyHash);
    expect(namespaceOf(new Headers(), undefined, '10.0.0.1').shared).toBe(true);
    expect(namespaceOf(new Headers(), { fromAddress: true }, undefined).shared).toBe(true);
    expect(namespaceOf(new Headers(), { fromAddress: true }, '10.0.0.1')).toEqual({
      keyHash: expect.stringMatching(/^[0-9a-f]{32}$/),
      shared: false,
    });
  });
});

/** POST from a chosen loopback address (each 127.x address is a client of its own). */
function postFrom(url: string, localAddress: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      {
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', [SESSION_HEADER]: SHARED_NAME },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
