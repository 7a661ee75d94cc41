/**
 * What a command may do to the outside world, injected so commands stay testable: only
 * `run-main.ts` binds these to the real process.
 */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Progress on long work (a bar on a terminal, plain lines otherwise). */
  progress: (done: number, total: number, label: string) => void;
  cwd: string;
  argv0: string;
  /** The environment, where API keys are read (by the variable `--llm-key-env` names). */
  env?: Readonly<Record<string, string | undefined>>;
}
