/** `selfgc mcp`: recovery of a session's removed content over the Model Context Protocol. */
export {
  createMcpServer,
  type McpServer,
  type McpServerOptions,
  negotiateProtocolVersion,
  PROTOCOL_VERSIONS,
} from './mcp-server.js';
export {
  DEFAULT_PAGE_CHARS,
  MAX_PAGE_CHARS,
  type McpTool,
  type McpToolResult,
  type RecoverySource,
} from './recovery-tools.js';
export { serveMcpLines } from './serve-mcp-lines.js';
