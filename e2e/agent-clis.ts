/**
 * The real agent CLIs the suite drives (installed by `npm ci --prefix e2e/agents`): how each is
 * pointed at a custom endpoint and run on one prompt without a terminal, with its telemetry,
 * update checks and other outside traffic turned off, and which of its own tools the scripted
 * model calls to read a file or run a shell command.
 *
 * Each route is spoken by a CLI: Claude Code Anthropic Messages, Codex OpenAI Responses (a custom
 * provider with `wire_api = "responses"`), opencode Chat Completions (an
 * `@ai-sdk/openai-compatible` provider); Cline speaks Messages and Responses too, through the AI
 * SDK.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScriptedToolCall } from '../src/testing/index.js';
import type { ScenarioName } from './agent-scenarios.js';
import type { WireRoute } from './read-wire-request.js';

export type AgentName =
  | 'claude-code'
  | 'codex'
  | 'codex-chatgpt'
  | 'opencode'
  | 'kilo'
  | 'cline'
  | 'cline-responses';

/** Where `npm ci --prefix e2e/agents` puts the CLIs. */
export const AGENTS_DIRECTORY = join(dirname(fileURLToPath(import.meta.url)), 'agents');

/** What one CLI run needs: its own HOME, the project it works in, the URL it is pointed at. */
export interface AgentContext {
  home: string;
  project: string;
  /** The endpoint's origin, without `/v1`. */
  baseUrl: string;
  prompt: string;
  /**
   * A project file the prompt comes with, attached the CLI's own way (Claude Code's `@path` in the
   * prompt, opencode's `--file`); a CLI that has none leaves it out.
   */
  attach?: string;
  /** Resume the CLI's latest saved conversation in this project instead of starting one. */
  continues: boolean;
  /** Set the CLI to compact by itself (`AgentCli.autoCompaction`). */
  autoCompacts: boolean;
}

export interface AgentLaunch {
  command: string;
  args: string[];
  /** The whole environment of the CLI (nothing is inherited beyond PATH). */
  env: Record<string, string>;
  /** Files to write before the run, absolute path → content (configuration in HOME). */
  files: Record<string, string>;
}

/** The CLI's own tools, as the scripted model calls them. */
export interface AgentTools {
  read(path: string): ScriptedToolCall;
  shell(command: string): ScriptedToolCall;
  /**
   * Hand a task to a subagent with the CLI's own agent tool, waiting for its report. Codex has
   * none to script: `codex exec` refuses its `spawn_agent` call.
   */
  delegate?(prompt: string): ScriptedToolCall;
  /** A request that offers none of these is a side request (a title, a summary), not the agent loop. */
  loopTools: readonly string[];
}

export interface AgentCli {
  name: AgentName;
  route: WireRoute;
  /** The binary `npm ci --prefix e2e/agents` installs. */
  binary: string;
  /**
   * The proxy's window for this CLI, small on purpose: its system prompt, tool definitions and
   * output reserve take a fixed part (Claude Code's about 14.5k tokens, Codex's 10.4k with its
   * developer messages, opencode's 8.7k, Cline's 5.2k), and what is left holds only a few step
   * files, so every scenario must fold.
   */
  window: number;
  tools: AgentTools;
  /**
   * The prompt that has the CLI compact the conversation it resumes in a non-interactive run
   * (Claude Code's `/compact`). Codex and opencode take `/compact` only interactively, so they
   * have no `compaction` scenario.
   */
  compactCommand?: string;
  /**
   * How the CLI compacts its conversation by itself in `auto-compaction`. It is set to compact
   * once the answers report a prompt of `at` tokens; behind the proxy they report the governed
   * size, below the window, so it compacts only when the proxy reports the client's whole prompt
   * (`--client-compaction-at`, from the same size). `window`, when set, is the proxy's window for
   * that scenario: one that holds the turn the CLI sends after its compaction.
   */
  autoCompaction?: { at: number; window?: number };
  /**
   * The CLI saves its conversations as JSON lines under HOME (Claude Code, Codex), which the
   * runner can cut back to an earlier step (`rewound-resume`); opencode keeps them in SQLite.
   */
  savesJsonLines?: boolean;
  /**
   * Its model binds thinking to its prefix (Claude Code's `claude-opus-5-5`, Claude 5.1 on), so
   * it plays `no-binding-controls`.
   */
  bindsThinking?: boolean;
  /** The scenarios it plays, when not all it can (a second sign-in of the same CLI). */
  scenarios?: readonly ScenarioName[];
  launch(context: AgentContext): AgentLaunch;
}

/** How long one CLI run may take in the runner before it is stopped. */
export const RUN_TIMEOUT_MS = 150_000;
/** How long the proxy may take to start listening in the runner (tsx compiles the sources on the way). */
export const PROXY_START_TIMEOUT_MS = 60_000;

/** The output reserve the CLIs are set to, scaled down with the window like a real one. */
export const OUTPUT_RESERVE = 2048;

const API_KEY = 'sk-selfgc-e2e';

/** Turned off for every CLI: telemetry, error reports, update checks, non-essential traffic. */
const QUIET_ENV = {
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_AUTOUPDATER: '1',
  DO_NOT_TRACK: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
};

function baseEnv(home: string): Record<string, string> {
  return {
    PATH: [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TMPDIR: join(home, 'tmp'),
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    ...QUIET_ENV,
  };
}

const claudeCode: AgentCli = {
  name: 'claude-code',
  route: 'messages',
  binary: join(AGENTS_DIRECTORY, 'node_modules', '.bin', 'claude'),
  window: 24_000,
  tools: {
    read: (path) => ({ name: 'Read', arguments: { file_path: path } }),
    shell: (command) => ({ name: 'Bash', arguments: { command, description: 'Show a note' } }),
    // A fresh general-purpose agent; in the foreground, so the report is the call's result.
    delegate: (prompt) => ({
      name: 'Agent',
      arguments: { description: 'Read the sub notes', prompt, run_in_background: false },
    }),
    loopTools: ['Read', 'Bash'],
  },
  compactCommand: '/compact',
  bindsThinking: true,
  // Its threshold is a share (40%) of the window it is told (100k, the least it takes). After
  // compacting it re-attaches the files it read last (five of the suite's, about 11k tokens) to
  // the turn it goes on with, which its usual window cannot hold beside its tools.
  autoCompaction: { at: 40_000, window: 32_000 },
  savesJsonLines: true,
  launch: ({ home, baseUrl, prompt, attach, continues, autoCompacts }) => ({
    command: claudeCode.binary,
    // Root may not skip permissions; the tools the scripted model calls are allowed by name instead.
    args: [
      '-p',
      attach === undefined ? prompt : `@${attach} ${prompt}`,
      ...(continues ? ['--continue'] : []),
      '--allowedTools',
      'Read,Bash,Agent',
      '--max-turns',
      '40',
      '--output-format',
      'text',
    ],
    env: {
      ...baseEnv(home),
      ANTHROPIC_BASE_URL: baseUrl,
      ANTHROPIC_API_KEY: API_KEY,
      CLAUDE_CODE_MAX_OUTPUT_TOKENS: String(OUTPUT_RESERVE),
      // The scripted upstream never fails by chance; a refused request is reported, not retried.
      CLAUDE_CODE_MAX_RETRIES: '1',
      DISABLE_UPDATES: '1',
      DISABLE_INSTALLATION_CHECKS: '1',
      DISABLE_FEEDBACK_COMMAND: '1',
      CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
      ...(autoCompacts
        ? { CLAUDE_CODE_AUTO_COMPACT_WINDOW: '100000', CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: '40' }
        : {}),
    },
    files: {},
  }),
};

/** An unsigned JSON Web Token: Codex reads a ChatGPT sign-in's claims and never checks a signature. */
function unsignedJwt(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.${Buffer.from('e2e').toString('base64url')}`;
}

/**
 * A ChatGPT sign-in as `codex login` leaves it in `auth.json`, for an account that exists nowhere:
 * its tokens expire in 2100, so Codex never tries to refresh them.
 */
function chatGptAuth(): string {
  const token = unsignedJwt({
    email: 'e2e@example.com',
    exp: 4_102_444_800,
    'https://api.openai.com/auth': {
      chatgpt_plan_type: 'plus',
      chatgpt_account_id: 'acct-e2e',
      chatgpt_user_id: 'user-e2e',
    },
  });
  const tokens = { id_token: token, access_token: token, refresh_token: 'rt-e2e', account_id: 'acct-e2e' };
  return `${JSON.stringify({ auth_mode: 'chatgpt', OPENAI_API_KEY: null, tokens, last_refresh: new Date().toISOString() })}\n`;
}

/**
 * Codex, signed in one of two ways. With an API key, a custom provider (`wire_api = "responses"`)
 * points it at the proxy. Signed in with ChatGPT, as most Codex users are, the built-in OpenAI
 * provider does (`openai_base_url`, without `/v1`), and then Codex opens a Responses WebSocket
 * first and sends its HTTP bodies zstd-compressed to `/responses`.
 */
function codexLaunch(cli: AgentCli, signIn: 'api-key' | 'chatgpt', context: AgentContext): AgentLaunch {
  const { home, baseUrl, prompt, continues } = context;
  const codexHome = join(home, '.codex');
  // Top-level keys come before the first table in TOML.
  const provider =
    signIn === 'api-key'
      ? {
          keys: ['model_provider = "selfgc"'],
          tables: [
            '[model_providers.selfgc]',
            'name = "selfgc proxy"',
            `base_url = "${baseUrl}/v1"`,
            'wire_api = "responses"',
            'env_key = "SELFGC_E2E_API_KEY"',
          ],
        }
      : {
          // No `/v1`: its upstream is the ChatGPT backend, `…/backend-api/codex/responses`.
          keys: [`openai_base_url = "${baseUrl}"`],
          // A ChatGPT sign-in also reaches chatgpt.com for its apps connector and plugin catalog,
          // each try taking seconds to fail in the namespace: off, like the other outside traffic.
          tables: ['[features]', 'apps = false', 'plugins = false'],
        };
  const config = [
    'model = "gpt-5-codex"',
    ...provider.keys,
    'approval_policy = "never"',
    // The run is inside a network namespace of its own in a throwaway directory.
    'sandbox_mode = "danger-full-access"',
    'check_for_update_on_startup = false',
    ...(context.autoCompacts ? [`model_auto_compact_token_limit = ${cli.autoCompaction?.at}`] : []),
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    ...provider.tables,
    '',
  ].join('\n');
  const files: Record<string, string> = { [join(codexHome, 'config.toml')]: config };
  if (signIn === 'chatgpt') files[join(codexHome, 'auth.json')] = chatGptAuth();
  return {
    command: cli.binary,
    args: continues
      ? ['exec', '--color', 'never', 'resume', '--last', '--skip-git-repo-check', prompt]
      : ['exec', '--skip-git-repo-check', '--color', 'never', prompt],
    env: {
      ...baseEnv(home),
      CODEX_HOME: codexHome,
      ...(signIn === 'api-key' ? { SELFGC_E2E_API_KEY: API_KEY } : {}),
    },
    files,
  };
}

const codex: AgentCli = {
  name: 'codex',
  route: 'responses',
  binary: join(AGENTS_DIRECTORY, 'node_modules', '.bin', 'codex'),
  window: 16_000,
  // Above its window behind the proxy.
  autoCompaction: { at: 20_000 },
  savesJsonLines: true,
  tools: {
    read: (path) => ({ name: 'exec_command', arguments: { cmd: `cat ${path}` } }),
    shell: (command) => ({ name: 'exec_command', arguments: { cmd: command } }),
    loopTools: ['exec_command'],
  },
  launch: (context) => codexLaunch(codex, 'api-key', context),
};

/**
 * The same Codex signed in with ChatGPT: the proxy must refuse its WebSocket so that it falls back
 * to HTTP at once, and read its zstd bodies. Three scenarios cover that: a long task, which
 * governance folds; a recovery, whose rounds the proxy sends upstream itself; and its compaction
 * by itself, which with the built-in provider is remote (its history sent to the API with a
 * `compaction_trigger` item, answered by one `compaction` item).
 */
const codexChatGpt: AgentCli = {
  ...codex,
  name: 'codex-chatgpt',
  scenarios: ['long-task', 'streaming-recovery', 'auto-compaction'],
  launch: (context) => codexLaunch(codex, 'chatgpt', context),
};

/**
 * How opencode and its fork Kilo's CLI reach the proxy: an `@ai-sdk/openai-compatible` provider
 * in the CLI's global config (Kilo reads opencode's format from its own file), the prompt run
 * with `run`, everything that would reach out turned off by the CLI's own variables.
 */
function opencodeLaunch(
  cli: AgentCli,
  flavour: {
    configFile: string;
    schema: string;
    envPrefix: 'OPENCODE' | 'KILO';
    /** Keys of the CLI's own beside the shared ones. */
    config?: Record<string, unknown>;
  },
  context: AgentContext,
): AgentLaunch {
  const { home, baseUrl, prompt, attach, continues, autoCompacts } = context;
  // It compacts once the answers report more than its context less its output limit.
  const context_ = autoCompacts ? (cli.autoCompaction?.at ?? 0) + OUTPUT_RESERVE : 200_000;
  const config = {
    $schema: flavour.schema,
    autoupdate: false,
    share: 'disabled',
    model: 'selfgc/scripted-model',
    small_model: 'selfgc/scripted-model',
    provider: {
      selfgc: {
        npm: '@ai-sdk/openai-compatible',
        name: 'selfgc proxy',
        options: { baseURL: `${baseUrl}/v1`, apiKey: API_KEY },
        models: {
          'scripted-model': { name: 'scripted model', limit: { context: context_, output: OUTPUT_RESERVE } },
        },
      },
    },
    ...flavour.config,
  };
  const off = [
    'DISABLE_AUTOUPDATE',
    'DISABLE_MODELS_FETCH',
    'DISABLE_SHARE',
    'DISABLE_LSP_DOWNLOAD',
    'DISABLE_DEFAULT_PLUGINS',
    'DISABLE_CLAUDE_CODE',
    'DISABLE_EXTERNAL_SKILLS',
  ];
  return {
    command: cli.binary,
    // `--file` takes every word after it: the prompt goes first.
    args: [
      'run',
      ...(continues ? ['--continue'] : []),
      prompt,
      ...(attach === undefined ? [] : ['--file', attach]),
    ],
    env: {
      ...baseEnv(home),
      ...Object.fromEntries(off.map((name) => [`${flavour.envPrefix}_${name}`, '1'])),
      ...(flavour.envPrefix === 'KILO'
        ? { KILO_TELEMETRY_LEVEL: 'off', KILO_DISABLE_SESSION_INGEST: '1' }
        : {}),
    },
    files: { [join(home, '.config', flavour.configFile)]: `${JSON.stringify(config, null, 2)}\n` },
  };
}

const OPENCODE_TOOLS: AgentTools = {
  read: (path) => ({ name: 'read', arguments: { filePath: path } }),
  shell: (command) => ({ name: 'bash', arguments: { command, description: 'Show a note' } }),
  delegate: (prompt) => ({
    name: 'task',
    arguments: { description: 'Read the sub notes', prompt, subagent_type: 'general' },
  }),
  loopTools: ['read', 'bash'],
};

const opencode: AgentCli = {
  name: 'opencode',
  route: 'chat',
  binary: join(AGENTS_DIRECTORY, 'node_modules', '.bin', 'opencode'),
  window: 16_000,
  // Above its window behind the proxy.
  autoCompaction: { at: 24_000 },
  tools: OPENCODE_TOOLS,
  launch: (context) =>
    opencodeLaunch(
      opencode,
      {
        configFile: 'opencode/opencode.json',
        schema: 'https://opencode.ai/config.json',
        envPrefix: 'OPENCODE',
      },
      context,
    ),
};

/**
 * Kilo Code's CLI, a fork of opencode: the same provider config and tools from its own file, and
 * its own compaction prompts (`Summarize conversation chunk N of M.` among them).
 */
const kilo: AgentCli = {
  ...opencode,
  name: 'kilo',
  // The Linux build itself, as Cline's: the launcher package's lock lists a build per platform.
  binary: join(AGENTS_DIRECTORY, 'node_modules', '@kilocode', 'cli-linux-x64', 'bin', 'kilo'),
  // Its prompt and tools take about 11k tokens, 2k more than opencode's.
  window: 24_000,
  // Two runs and the subagent go as opencode's do (the same launch, session header and task
  // tool); each run starts slowly, so the suite keeps to the scenarios its prompts change.
  scenarios: ['long-task', 'streaming-recovery', 'resume', 'auto-compaction', 'parallel-reads'],
  autoCompaction: { at: 32_000 },
  launch: (context) =>
    opencodeLaunch(
      kilo,
      {
        configFile: 'kilo/kilo.json',
        schema: 'https://app.kilo.ai/config.json',
        envPrefix: 'KILO',
        // Its built-in Kilo Gateway provider fetches its model list from api.kilo.ai at every
        // start, signed in or not, whatever KILO_DISABLE_MODELS_FETCH says (that is models.dev's).
        config: { disabled_providers: ['kilo'] },
      },
      context,
    ),
};

/**
 * How Cline's CLI (built on the Cline SDK) reaches the proxy: its provider settings with a base
 * URL, its own tools, run in-process (`CLINE_SESSION_BACKEND_MODE=local`: by default it starts a
 * hub daemon that outlives the run).
 */
function clineLaunch(
  cli: AgentCli,
  provider: 'anthropic' | 'openai-native',
  context: AgentContext,
): AgentLaunch {
  const { home, baseUrl, prompt } = context;
  const providers = {
    version: 1,
    lastUsedProvider: provider,
    modes: {},
    providers: {
      [provider]: {
        settings: {
          provider,
          apiKey: API_KEY,
          // On Anthropic, a model its catalog gives 4,096 output tokens, which the request asks
          // for (the setting's `maxTokens` is not read) and the window must leave room for; the
          // OpenAI provider asks for none, and the proxy keeps its own reserve.
          model: provider === 'anthropic' ? 'claude-3-haiku-20240307' : 'gpt-4o-mini',
          baseUrl: `${baseUrl}/v1`,
        },
        updatedAt: new Date().toISOString(),
        tokenSource: 'manual',
      },
    },
  };
  return {
    command: cli.binary,
    // Its own compaction (by the usage the upstream reports) stays out of the scenarios.
    args: ['--compaction', 'off', prompt],
    env: {
      ...baseEnv(home),
      CLINE_SESSION_BACKEND_MODE: 'local',
      CLINE_NO_AUTO_UPDATE: '1',
    },
    files: {
      [join(home, '.cline', 'data', 'settings', 'providers.json')]: `${JSON.stringify(providers, null, 2)}\n`,
    },
  };
}

/**
 * Cline's CLI with its Anthropic provider: a second Messages client, on the AI SDK rather than
 * Anthropic's own, whose tool results are JSON text.
 */
const cline: AgentCli = {
  name: 'cline',
  route: 'messages',
  // The Linux build of `cline` itself: the `cline` package is a launcher whose lock lists a build
  // per platform, and `npm ci` refuses a lock that lacks those the registry does not serve.
  binary: join(AGENTS_DIRECTORY, 'node_modules', '.bin', 'cline'),
  window: 16_000,
  tools: {
    read: (path) => ({ name: 'read_files', arguments: { files: [{ path }] } }),
    shell: (command) => ({ name: 'run_commands', arguments: { commands: [command] } }),
    delegate: (prompt) => ({
      name: 'spawn_agent',
      arguments: { systemPrompt: 'You read notes and report on them.', task: prompt },
    }),
    loopTools: ['read_files', 'run_commands'],
  },
  // A resumed session (`--id`) runs only in its interactive mode, and it compacts on its own only.
  scenarios: ['two-runs', 'long-task', 'streaming-recovery', 'subagent', 'concurrent-runs'],
  launch: (context) => clineLaunch(cline, 'anthropic', context),
};

/**
 * The same Cline with its OpenAI provider, which speaks Responses without `store: false` (the
 * API keeps the items, as Codex never has it): the long task, and a recovery whose merged stream
 * must keep the pairs of items the provider holds.
 */
const clineResponses: AgentCli = {
  ...cline,
  name: 'cline-responses',
  route: 'responses',
  scenarios: ['long-task', 'streaming-recovery'],
  launch: (context) => clineLaunch(cline, 'openai-native', context),
};

export const AGENT_CLIS: Readonly<Record<AgentName, AgentCli>> = {
  'claude-code': claudeCode,
  codex,
  'codex-chatgpt': codexChatGpt,
  opencode,
  kilo,
  cline,
  'cline-responses': clineResponses,
};
