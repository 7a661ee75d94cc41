/**
 * Writing an output whole or not at all: into a temporary file beside it, renamed over it once
 * complete, so that a run that fails or is interrupted midway leaves the previous file as it was.
 * A path that is not a regular file (/dev/stdout, a pipe) or whose directory cannot take the
 * temporary file is written in place, and so is one that cannot be renamed over (a file mounted
 * alone into a container).
 */

import { randomBytes } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  constants,
  copyFileSync,
  createWriteStream,
  lstatSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  type WriteStream,
  writeFileSync,
} from 'node:fs';
import { dirname, resolve } from 'node:path';
import { BadInputError } from '../core/errors.js';
import { statOrUndefined } from './cli-args.js';

export interface OutputStream {
  stream: WriteStream;
  /** After the stream closed without error: the output takes the file's place. */
  commit: () => void;
  /** After a failure: the partial output goes, the previous file stays. */
  discard: () => void;
}

interface Target {
  /** The file written; a symbolic link is followed, so the link stays. */
  path: string;
  /** The temporary file beside it, or undefined to write in place. */
  temporary: string | undefined;
  /** The previous file's mode, which the temporary file has from its creation. */
  mode: number | undefined;
}

/** Where a link that leads to no file yet points (writing creates the file there), else `path`. */
function danglingLinkTarget(path: string): string {
  try {
    return lstatSync(path).isSymbolicLink() ? resolve(dirname(path), readlinkSync(path)) : path;
  } catch {
    return path;
  }
}

function targetOf(path: string): Target {
  const existing = statOrUndefined(path);
  if (existing !== undefined && !existing.isFile()) return { path, temporary: undefined, mode: undefined };
  const target = existing === undefined ? danglingLinkTarget(path) : realpathSync(path);
  try {
    accessSync(dirname(target), constants.W_OK);
  } catch {
    return { path, temporary: undefined, mode: undefined };
  }
  return {
    path: target,
    // Not guessable, and created exclusively: a file planted there (a link in /tmp) is never followed.
    temporary: `${target}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
    mode: existing === undefined ? undefined : existing.mode & 0o7777,
  };
}

/** A file that cannot be renamed over (mounted alone into a container), or across devices. */
const NOT_RENAMED = new Set(['EBUSY', 'EXDEV']);

function replace(target: Target & { temporary: string }): void {
  if (target.mode !== undefined) chmodSync(target.temporary, target.mode);
  try {
    renameSync(target.temporary, target.path);
  } catch (error) {
    if (!NOT_RENAMED.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
    // Written in place, as before outputs were renamed: complete, if not in one step.
    copyFileSync(target.temporary, target.path);
    rmSync(target.temporary, { force: true });
  }
}

/** Write `text` to `path` whole, or leave `path` as it was and say why, naming `flag`. */
export function writeOutputFile(path: string, text: string, flag: string): void {
  const target = targetOf(path);
  try {
    if (target.temporary === undefined) {
      writeFileSync(path, text);
      return;
    }
    try {
      writeFileSync(target.temporary, text, { flag: 'wx', mode: target.mode ?? 0o666 });
      replace({ ...target, temporary: target.temporary });
    } catch (error) {
      rmSync(target.temporary, { force: true });
      throw error;
    }
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new BadInputError(`${flag}: cannot write ${path} (${reason})`, { cause: error });
  }
}

/** Signals that end a run midway (Ctrl-C, kill, a closed terminal). */
const INTERRUPTIONS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Remove `temporary` if the process is interrupted before `stop` is called, then end on the same
 * signal as it would have. Returns `stop`.
 */
function removeOnInterruption(temporary: string): () => void {
  const stop = () => {
    for (const signal of INTERRUPTIONS) process.off(signal, interrupted);
  };
  const interrupted = (signal: NodeJS.Signals) => {
    stop();
    rmSync(temporary, { force: true });
    process.kill(process.pid, signal);
  };
  for (const signal of INTERRUPTIONS) process.on(signal, interrupted);
  return stop;
}

/**
 * A stream whose output replaces `path` only on `commit`; a failure names `flag`. Until `commit`
 * or `discard`, an interruption removes the temporary file.
 */
export function openOutputStream(path: string, flag: string): OutputStream {
  const target = targetOf(path);
  const temporary = target.temporary;
  if (temporary === undefined)
    return { stream: createWriteStream(path), commit: () => undefined, discard: () => undefined };
  const stop = removeOnInterruption(temporary);
  const discard = () => {
    stop();
    rmSync(temporary, { force: true });
  };
  return {
    stream: createWriteStream(temporary, { flags: 'wx', mode: target.mode ?? 0o666 }),
    commit: () => {
      try {
        replace({ ...target, temporary });
      } catch (error) {
        discard();
        const reason = (error as NodeJS.ErrnoException).code ?? String(error);
        throw new BadInputError(`${flag}: cannot write ${path} (${reason})`, { cause: error });
      }
      stop();
    },
    discard,
  };
}
