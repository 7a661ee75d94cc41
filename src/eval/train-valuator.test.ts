import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CliIo } from '../cli/cli-io.js';
import { runCommand } from '../cli/run-main.js';
import { moduleSource } from '../core/testing/long-session.js';
import { toolRound, userMessage } from '../core/testing/transcript-builders.js';
import type { Message } from '../core/transcript.js';
import { parseEntryModel } from '../core/valuator/entry-model.js';
import type { RecordedSession } from './load-sessions.js';
import { collectExamples, familyOf, fitEntryModel, leaveOneFamilyOut } from './train-valuator.js';

/**
 * An agent that reads a module a step and, from the twelfth on, quotes a name of the module it
 * read ten steps back (older than the latest steps, so only an index could show it).
 */
function recallingSession(rounds: number): Message[] {
  const messages: Message[] = [userMessage('Review the handlers under src/handlers.')];
  for (let index = 1; index <= rounds; index += 1) {
    const text =
      index > 11 ? `handler_${index - 10}_2 in module_${index - 10} needs the same fix.` : 'Reading on.';
    messages.push(
      ...toolRound(
        `read_${index}`,
        'read_file',
        { path: `src/handlers/module_${index}.py` },
        moduleSource(index, 8),
        {
          text,
        },
      ),
    );
  }
  return messages;
}

function sessions(): RecordedSession[] {
  return [
    { id: 'a', file: '/data/review-agent.jsonl', line: 1, messages: recallingSession(24), warnings: [] },
    { id: 'b', file: '/data/review-agent.jsonl', line: 2, messages: recallingSession(18), warnings: [] },
    { id: 'c', file: '/data/other-agent.jsonl', line: 1, messages: recallingSession(30), warnings: [] },
  ];
}

describe('training the entry valuator', () => {
  it('labels an anchor 1 when the next assistant messages use it, from older messages only', () => {
    const set = collectExamples(sessions(), { negativeSampling: 1 });
    expect(set.sessions).toBe(3);
    expect(set.rows.length).toBeGreaterThan(100);
    expect(set.labels).toContain(1);
    expect(set.labels).toContain(0);
    // Every unused anchor is kept at sampling 1, each with weight 1.
    expect(new Set(set.weights)).toEqual(new Set([1]));
    expect(new Set(set.families)).toEqual(new Set(['review-agent', 'other-agent']));
    // The agent quotes the names of the module read two steps back: recent use scores above old.
    const model = fitEntryModel(set);
    expect((model.trainedOn as { auc: number }).auc).toBeGreaterThan(0.6);
  });

  it('samples unused anchors and weighs them back up, the same way on every run', () => {
    const full = collectExamples(sessions(), { negativeSampling: 1 });
    const sampled = collectExamples(sessions(), { negativeSampling: 4 });
    expect(sampled.labels.filter((label) => label === 1)).toHaveLength(
      full.labels.filter((label) => label === 1).length,
    );
    expect(sampled.rows.length).toBeLessThan(full.rows.length);
    expect(sampled.weights.filter((weight) => weight === 4).length).toBeGreaterThan(0);
    expect(collectExamples(sessions(), { negativeSampling: 4 })).toEqual(sampled);
  });

  it('fits a model that reads back as one, and validates each family left out', () => {
    const set = collectExamples(sessions());
    const model = parseEntryModel(JSON.parse(JSON.stringify(fitEntryModel(set))));
    expect(model.trainedOn).toMatchObject({ families: ['other-agent', 'review-agent'] });
    const rows = leaveOneFamilyOut(set);
    expect(rows.map((row) => row.family)).toEqual(['other-agent', 'review-agent']);
    for (const row of rows) {
      expect(row.examples).toBeGreaterThan(0);
      expect(row.heldOutAuc).toBeGreaterThan(0.5);
      expect(row.inFamilyAuc).toBeGreaterThan(0.5);
    }
  });

  it('names a family by its file', () => {
    expect(familyOf({ file: '/x/codex-cli_entire-checkpoints.jsonl' })).toBe('codex-cli_entire-checkpoints');
  });
});

describe('selfgc train and --model', () => {
  function captureIo() {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = {
      stdout: (text) => out.push(text),
      stderr: (text) => err.push(text),
      progress: () => {},
      cwd: process.cwd(),
      argv0: 'selfgc',
    };
    return { io, out: () => out.join(''), err: () => err.join('') };
  }

  function sessionsFile(): string {
    const directory = mkdtempSync(join(tmpdir(), 'selfgc-train-'));
    const file = join(directory, 'review-agent.jsonl');
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
      [24, 30]
        .map((rounds, index) => JSON.stringify({ id: `s${index}`, messages: chat(recallingSession(rounds)) }))
        .join('\n'),
    );
    return file;
  }

  it('writes a model that eval --model reads, and prints leave-one-family-out', async () => {
    const file = sessionsFile();
    const out = join(mkdtempSync(join(tmpdir(), 'selfgc-model-')), 'model.json');
    const train = captureIo();
    expect(await runCommand(['train', file, '--out', out, '--leave-one-family-out'], train.io)).toBe(0);
    expect(train.out()).toMatch(/2 sessions, \d+ examples \(\d+ used\), training AUC 0\.\d{3}/);
    expect(train.out()).toMatch(/review-agent\s+\d+\s+/);
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
