import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseEntryModel } from '../core/valuator/entry-model.js';
import type { RecordedSession } from '../eval/load-sessions.js';
import { recallingSession } from '../eval/testing/eval-fixtures.js';
import { runCommand } from './run-main.js';
import { captureIo } from './testing/capture-io.js';

describe('selfgc train and --model', () => {
  function sessionsFile(family = 'review-agent', rounds = [24, 30]): string {
    const directory = mkdtempSync(join(tmpdir(), 'selfgc-train-'));
    const file = join(directory, `${family}.jsonl`);
    const chat = (messages: RecordedSession['messages']) =>
      messages.map((message) => {
        if (message.role === 'tool') {
          const part = message.parts[0] as { callId: string; content: string };
          return { role: 'tool', tool_call_id: part.callId, content: part.content };
        }
        const text = message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
        const calls = message.parts.flatMap((part) =>
          part.type === 'tool-call'
            ? [{ id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } }]
            : [],
        );
        return { role: message.role, content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
      });
    writeFileSync(
      file,
      rounds
        .map((rounds, index) =>
          JSON.stringify({ id: `${family}-${index}`, messages: chat(recallingSession(rounds)) }),
        )
        .join('\n'),
    );
    return file;
  }

  it('writes a model that eval --model reads, and prints leave-one-family-out', async () => {
    const file = sessionsFile();
    const other = sessionsFile('coding-agent', [28]);
    const out = join(mkdtempSync(join(tmpdir(), 'selfgc-model-')), 'model.json');
    const train = captureIo();
    expect(await runCommand(['train', file, other, '--out', out, '--leave-one-family-out'], train.io)).toBe(
      0,
    );
    expect(train.out()).toMatch(
      /3 sessions, \d+ examples \(\d+ used\), training AUC 0\.\d{3}, within messages 0\.\d{3}/,
    );
    expect(train.out()).toMatch(/review-agent(\s+\d+){1}(\s+\d\.\d{3}){4}\n/);
    expect(train.out()).toMatch(/coding-agent(\s+\d+){1}(\s+\d\.\d{3}){4}\n/);
    parseEntryModel(JSON.parse(readFileSync(out, 'utf8')));
    const evaluate = captureIo();
    expect(
      await runCommand(
        [
          'eval',
          file,
          '--modes',
          'session',
          '--strategies',
          'selfgc',
          '--window',
          '2000',
          '--workers',
          '1',
          '--model',
          out,
        ],
        evaluate.io,
      ),
    ).toBe(0);
    expect(evaluate.out()).toContain('selfgc');
  });

  it('labels by the horizon it is given: a shorter one sees fewer entries used', async () => {
    const file = sessionsFile();
    const directory = mkdtempSync(join(tmpdir(), 'selfgc-model-'));
    const used = async (args: string[]) => {
      const io = captureIo();
      expect(await runCommand(['train', file, '--out', join(directory, 'model.json'), ...args], io.io)).toBe(
        0,
      );
      expect(JSON.parse(readFileSync(join(directory, 'model.json'), 'utf8')).trainedOn.horizon).toBe(
        args[1] === undefined ? 20 : Number(args[1]),
      );
      return Number(/\((\d+) used\)/.exec(io.out())![1]);
    };
    const shortest = await used(['--horizon', '1']);
    const longest = await used([]);
    expect(shortest).toBeGreaterThan(0);
    expect(shortest).toBeLessThan(longest);
    await expect(
      runCommand(['train', file, '--out', join(directory, 'model.json'), '--horizon', '0'], captureIo().io),
    ).rejects.toThrow(/--horizon: expected a positive integer/);
  });

  it('refuses leave-one-family-out on one family, which has nothing to be held out from', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'selfgc-model-')), 'model.json');
    const io = captureIo();
    await expect(
      runCommand(['train', sessionsFile(), '--out', out, '--leave-one-family-out'], io.io),
    ).rejects.toThrow(
      '--leave-one-family-out needs sessions from at least two files: each file is a family, and one is held out at a time',
    );
    expect(io.progress()).toBe(0);
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a missing --out, a missing model file and a file that is not a model', async () => {
    const file = sessionsFile();
    const missingOut = captureIo();
    await expect(runCommand(['train', file], missingOut.io)).rejects.toThrow(/--out FILE/);
    const notJson = join(mkdtempSync(join(tmpdir(), 'selfgc-model-')), 'bad.json');
    writeFileSync(notJson, '{"format":"something-else"}');
    for (const [model, message] of [
      ['/no/such/model.json', /no such file/],
      [notJson, /not a Self-GC entry valuator model/],
    ] as const) {
      const io = captureIo();
      await expect(runCommand(['eval', file, '--model', model], io.io)).rejects.toThrow(message);
    }
  });
});
