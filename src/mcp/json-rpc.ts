/**
 * JSON-RPC 2.0 as MCP's stdio transport carries it: one message per line, no batches (MCP
 * 2025-06-18 removed them). Reading a line never throws: what cannot be read becomes the error
 * answer the spec asks for.
 */

/** A request or notification id: MCP allows a string or an integer, never null. */
export type JsonRpcId = string | number;

/** The error codes of JSON-RPC 2.0 that this server answers with. */
export const JSON_RPC_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;

/** A message read from one line. */
export type IncomingMessage =
  /** A call that expects an answer. */
  | { kind: 'request'; id: JsonRpcId; method: string; params: unknown }
  /** A call that must never be answered. */
  | { kind: 'notification'; method: string; params: unknown }
  /** An answer from the client: this server sends no requests, so it is dropped. */
  | { kind: 'response' }
  /** Nothing to do (a blank line). */
  | { kind: 'empty' }
  /** A line that is not a valid message: answer with `error`. */
  | { kind: 'invalid'; id: JsonRpcId | null; code: number; message: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
}

/** Read one line of the stream. */
export function readJsonRpcLine(line: string): IncomingMessage {
  if (line.trim() === '') return { kind: 'empty' };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { kind: 'invalid', id: null, code: JSON_RPC_ERRORS.parseError, message: `Parse error: ${reason}` };
  }
  const invalid = (message: string, id: JsonRpcId | null = null): IncomingMessage => ({
    kind: 'invalid',
    id,
    code: JSON_RPC_ERRORS.invalidRequest,
    message: `Invalid Request: ${message}`,
  });
  if (Array.isArray(value)) return invalid('batches are not supported; send one message per line');
  if (!isRecord(value)) return invalid('a message is a JSON object');
  const id = isId(value.id) ? value.id : null;
  if (value.jsonrpc !== '2.0') return invalid('"jsonrpc" must be "2.0"', id);
  if (value.method === undefined && ('result' in value || 'error' in value)) return { kind: 'response' };
  if (typeof value.method !== 'string') return invalid('"method" must be a string', id);
  if (value.params !== undefined && !isRecord(value.params) && !Array.isArray(value.params)) {
    return invalid('"params" must be an object', id);
  }
  if (!('id' in value)) return { kind: 'notification', method: value.method, params: value.params };
  if (id === null) return invalid('"id" must be a string or an integer');
  return { kind: 'request', id, method: value.method, params: value.params };
}

/** The line answering request `id` with `result`. */
export function resultLine(id: JsonRpcId, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

/** The line answering request `id` (null when it could not be read) with an error. */
export function errorLine(id: JsonRpcId | null, code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
}
