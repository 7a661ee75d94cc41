/**
 * A Model Context Protocol server for one session of a store: `initialize` (with protocol
 * version negotiation), `ping`, `tools/list` and `tools/call` of the recovery tools.
 * Transport-free: a line in, the answer line (or nothing, for a notification) out.
 */
import { errorLine, JSON_RPC_ERRORS, type JsonRpcId, readJsonRpcLine, resultLine } from './json-rpc.js';
import {
  callRecoveryTool,
  isRecoveryToolName,
  type RecoverySource,
  recoveryTools,
} from './recovery-tools.js';

/** Protocol revisions this server speaks, newest first. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

export interface McpServerOptions {
  /** The governor's recovery path over the store. */
  source: RecoverySource;
  /** The store session whose removed content the tools reach (`<keyHash>:<sessionId>` for the proxy's). */
  sessionId: string;
  /** This program's version, for `serverInfo`. */
  version: string;
}

export interface McpServer {
  /** The answer to one line of the stream, or undefined when none is due. Never rejects. */
  handleLine(line: string): Promise<string | undefined>;
}

class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function paramsOf(params: unknown): Record<string, unknown> {
  return typeof params === 'object' && params !== null && !Array.isArray(params)
    ? (params as Record<string, unknown>)
    : {};
}

/**
 * The version to speak: the client's when this server knows it, else the newest this server
 * knows (the client then decides whether it can go on).
 */
export function negotiateProtocolVersion(requested: string): string {
  return (PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : PROTOCOL_VERSIONS[0];
}

export function createMcpServer(options: McpServerOptions): McpServer {
  const instructions =
    "Self-GC folds old tool output and finished work out of this agent's context and keeps it. When the " +
    'context shows a placeholder naming expand("<id>"), call expand with that id to read the original; ' +
    'search_context finds removed content by its words.';

  async function answer(method: string, params: unknown): Promise<unknown> {
    switch (method) {
      case 'initialize': {
        const requested = paramsOf(params).protocolVersion;
        if (typeof requested !== 'string')
          throw new ProtocolError(JSON_RPC_ERRORS.invalidParams, 'initialize needs params.protocolVersion');
        return {
          protocolVersion: negotiateProtocolVersion(requested),
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'selfgc', title: 'Self-GC recovery', version: options.version },
          instructions,
        };
      }
      case 'ping':
        return {};
      case 'tools/list':
        return { tools: recoveryTools() };
      case 'tools/call': {
        const { name, arguments: input } = paramsOf(params);
        if (typeof name !== 'string')
          throw new ProtocolError(JSON_RPC_ERRORS.invalidParams, 'tools/call needs params.name');
        if (!isRecoveryToolName(name))
          throw new ProtocolError(JSON_RPC_ERRORS.invalidParams, `Unknown tool: ${name}`);
        return callRecoveryTool(options.source, options.sessionId, name, input);
      }
      default:
        throw new ProtocolError(JSON_RPC_ERRORS.methodNotFound, `Method not found: ${method}`);
    }
  }

  async function respond(id: JsonRpcId, method: string, params: unknown): Promise<string> {
    try {
      return resultLine(id, await answer(method, params));
    } catch (error) {
      if (error instanceof ProtocolError) return errorLine(id, error.code, error.message);
      const reason = error instanceof Error ? error.message : String(error);
      return errorLine(id, JSON_RPC_ERRORS.internalError, `Internal error: ${reason}`);
    }
  }

  return {
    async handleLine(line) {
      const message = readJsonRpcLine(line);
      switch (message.kind) {
        case 'request':
          return respond(message.id, message.method, message.params);
        case 'invalid':
          return errorLine(message.id, message.code, message.message);
        // Notifications (`notifications/initialized`, `notifications/cancelled`, …) need no answer.
        default:
          return undefined;
      }
    },
  };
}
