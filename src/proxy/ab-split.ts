/**
 * The A/B split by account: a key's arm is a pure function of its hash, so an account stays in
 * one arm across requests, processes and proxy instances.
 */
import { createHash } from 'node:crypto';

export type Arm = 'governed' | 'control';

export interface AbSplit {
  /** Share of accounts (0…1) in the governed arm. */
  share: number;
  /** Changes which accounts fall in which arm without changing the share. */
  salt?: string;
}

/** A number in [0, 1) drawn from the key hash and the salt. */
export function splitPoint(keyHash: string, salt = ''): number {
  const digest = createHash('sha256').update(`${salt}\0${keyHash}`, 'utf8').digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

/** The arm of an account. Without a split, every account is governed. */
export function chooseArm(keyHash: string, split: AbSplit | undefined): Arm {
  if (split === undefined) return 'governed';
  return splitPoint(keyHash, split.salt) < split.share ? 'governed' : 'control';
}
