/**
 * The event grammar of each governed route's streams, checked on what a client received: the
 * ways a merged stream could break it (two message starts, indexes that skip, two finish
 * reasons, a final response that differs from what was streamed, a proxy tool showing). Returns
 * the violations found, so a test can assert there are none and print them when there are.
 */
import { isDeepStrictEqual } from 'node:util';
import { parseSse, type SseEvent } from '../../testing/read-sse.js';
import type { WireRoute } from './agent-conversation.js';

type Payload = Record<string, unknown> & { type?: string };

function payloads(events: readonly SseEvent[]): Payload[] {
  return events.filter((event) => event.data !== '[DONE]').map((event) => JSON.parse(event.data) as Payload);
}

function namedAsTyped(events: readonly SseEvent[], problems: string[]): void {
  for (const event of events) {
    const type = (JSON.parse(event.data) as Payload).type;
    if (event.event !== type) problems.push(`event "${event.event}" carries type "${type}"`);
  }
}

function messagesGrammar(events: readonly SseEvent[]): string[] {
  const problems: string[] = [];
  namedAsTyped(events, problems);
  const typed = payloads(events).filter((payload) => payload.type !== 'ping');
  const types = typed.map((payload) => payload.type);
  if (types[0] !== 'message_start') problems.push(`first event is ${types[0]}`);
  if (types.at(-1) !== 'message_stop') problems.push(`last event is ${types.at(-1)}`);
  for (const once of ['message_start', 'message_delta', 'message_stop']) {
    const count = types.filter((type) => type === once).length;
    if (count !== 1) problems.push(`${count} ${once} events`);
  }
  const open = new Set<number>();
  let started = 0;
  for (const payload of typed) {
    const index = payload.index as number;
    if (payload.type === 'content_block_start') {
      if (index !== started) problems.push(`block ${index} started where ${started} was next`);
      started += 1;
      open.add(index);
    } else if (payload.type === 'content_block_delta' && !open.has(index)) {
      problems.push(`delta for block ${index}, which is not open`);
    } else if (payload.type === 'content_block_stop') {
      if (!open.delete(index)) problems.push(`stop for block ${index}, which is not open`);
    } else if (payload.type === 'message_delta' && open.size > 0) {
      problems.push(`message_delta with blocks ${[...open].join(', ')} still open`);
    }
  }
  return problems;
}

function chatGrammar(events: readonly SseEvent[]): string[] {
  const problems: string[] = [];
  const done = events.findIndex((event) => event.data === '[DONE]');
  if (done !== events.length - 1) problems.push(`[DONE] at ${done} of ${events.length} events`);
  const chunks = payloads(events);
  const ids = new Set(chunks.map((chunk) => chunk.id));
  if (ids.size !== 1) problems.push(`${ids.size} completion ids: ${[...ids].join(', ')}`);
  const choices = chunks.flatMap((chunk) => chunk.choices as Payload[]);
  const finishes = choices.filter((choice) => choice.finish_reason !== null);
  if (finishes.length !== 1) problems.push(`${finishes.length} finish reasons`);
  const roles = choices.filter((choice) => (choice.delta as Payload).role !== undefined);
  if (roles.length !== 1) problems.push(`${roles.length} role deltas`);
  // Tool calls open at 0, 1, 2, … (with their id), and each delta continues the latest one.
  let opened = 0;
  for (const choice of choices) {
    for (const call of ((choice.delta as Payload).tool_calls as Payload[] | undefined) ?? []) {
      if (call.index === opened) {
        opened += 1;
        if (typeof call.id !== 'string') problems.push(`tool call ${call.index} opens without an id`);
      } else if (call.index !== opened - 1) {
        problems.push(`tool call delta for index ${call.index} after ${opened} calls opened`);
      }
    }
  }
  return problems;
}

function responsesGrammar(events: readonly SseEvent[]): string[] {
  const problems: string[] = [];
  // Optional (Responses-compatible servers send one), and then the last: the SDK reads no further.
  const done = events.flatMap((event, position) => (event.data === '[DONE]' ? [position] : []));
  if (done.length > 0 && (done.length > 1 || done[0] !== events.length - 1))
    problems.push(`[DONE] at ${done.join(', ')} of ${events.length} events`);
  namedAsTyped(
    events.filter((event) => event.data !== '[DONE]'),
    problems,
  );
  const typed = payloads(events);
  typed.forEach((payload, position) => {
    if (payload.sequence_number !== position)
      problems.push(`event ${position} has sequence_number ${payload.sequence_number}`);
  });
  const types = typed.map((payload) => payload.type);
  if (types[0] !== 'response.created') problems.push(`first event is ${types[0]}`);
  const last = typed.at(-1);
  if (last?.type !== 'response.completed') problems.push(`last event is ${last?.type}`);
  if (types.filter((type) => type === 'response.created').length !== 1)
    problems.push('several response.created');
  const items: Payload[] = [];
  let added = 0;
  for (const payload of typed) {
    const index = payload.output_index as number | undefined;
    if (payload.type === 'response.output_item.added') {
      if (index !== added) problems.push(`item ${index} added where ${added} was next`);
      added += 1;
    } else if (index !== undefined && index >= added) {
      problems.push(`${payload.type} for item ${index}, not added yet`);
    }
    if (payload.type === 'response.output_item.done') items[index as number] = payload.item as Payload;
  }
  const created = typed[0]?.response as Payload | undefined;
  const final = last?.response as Payload | undefined;
  if (final?.id !== created?.id) problems.push(`final response ${final?.id} is not ${created?.id}`);
  if (!isDeepStrictEqual(final?.output, items))
    problems.push('final response.output differs from the items streamed');
  return problems;
}

const GRAMMARS: Record<WireRoute, (events: readonly SseEvent[]) => string[]> = {
  chat: chatGrammar,
  responses: responsesGrammar,
  messages: messagesGrammar,
};

/** What in a received stream breaks the route's event grammar, or mentions the proxy's tools. */
export function streamGrammarProblems(route: WireRoute, text: string): string[] {
  const problems = GRAMMARS[route](parseSse(text));
  if (text.includes('selfgc_')) problems.push("the stream mentions the proxy's tools");
  return problems;
}
