import { describe, expect, it } from 'vitest';
import { BadInputError } from './errors.js';
import { indexTranscript, type Ledger, type LedgerObject } from './ledger.js';
import {
  ATTACHED_OUTPUT_SPEC_VERSION,
  objectPayload,
  parseObjectPayload,
  payloadSearchText,
  payloadText,
} from './object-payload.js';
import { CLI_SOURCE, threeRequestSession } from './testing/sample-session.js';
import { approximateTokenCounter } from './tokens.js';
import { TRANSCRIPT_SPEC_VERSION } from './transcript.js';

function session(): Ledger {
  return indexTranscript(threeRequestSession(), { tokenCounter: approximateTokenCounter });
}

function object(ledger: Ledger, id: string): LedgerObject {
  const found = ledger.get(id);
  if (!found) throw new Error(`no ${id}`);
  return found;
}

describe('objectPayload', () => {
  it('holds the exact tool-result part of a function object', () => {
    const ledger = session();
    const payload = objectPayload(ledger, object(ledger, 'function:bash:2'));
    expect(payload).toEqual({
      specVersion: TRANSCRIPT_SPEC_VERSION,
      objectId: 'function:bash:2',
      kind: 'function',
      messageIndex: 5,
      partIndex: 0,
      part: ledger.messages[5]?.parts[0],
      shell: { messageIndex: 4, message: ledger.messages[4] },
    });
  });

  it('holds the exact messages of a conversation span', () => {
    const ledger = session();
    const payload = objectPayload(ledger, object(ledger, 'conversation:user:2'));
    expect(payload).toEqual({
      specVersion: TRANSCRIPT_SPEC_VERSION,
      objectId: 'conversation:user:2',
      kind: 'conversation',
      start: 11,
      messages: ledger.messages.slice(11, 17),
    });
  });

  it('survives JSON text byte for byte', () => {
    const ledger = session();
    for (const entry of ledger.objects) {
      const payload = objectPayload(ledger, entry);
      const textValue = JSON.stringify(payload);
      expect(parseObjectPayload(textValue, 'test')).toEqual(payload);
      expect(JSON.stringify(parseObjectPayload(textValue, 'test'))).toBe(textValue);
    }
  });

  it('refuses a function object whose result is missing', () => {
    const ledger = session();
    const broken = { ...object(ledger, 'function:bash:2'), messageIndex: 4 };
    expect(() => objectPayload(ledger, broken)).toThrow(BadInputError);
  });
});

describe('parseObjectPayload', () => {
  it('names where invalid JSON came from', () => {
    expect(() => parseObjectPayload('{not json', 'sidecar s/function:bash:1')).toThrow(
      /sidecar s\/function:bash:1: invalid JSON/,
    );
  });

  it('refuses an unknown spec version', () => {
    const textValue = JSON.stringify({ specVersion: ATTACHED_OUTPUT_SPEC_VERSION + 1, objectId: 'x' });
    expect(() => parseObjectPayload(textValue, 'here')).toThrow(BadInputError);
    expect(() => parseObjectPayload(textValue, 'here')).toThrow(/spec version/);
  });

  it('reads a version 1 payload (written before opaque parts) as it is', () => {
    const stored = {
      specVersion: 1,
      objectId: 'conversation:user:1',
      kind: 'conversation',
      start: 1,
      messages: [],
    };
    expect(parseObjectPayload(JSON.stringify(stored), 'here')).toEqual(stored);
  });
});

describe('payloadText and payloadSearchText', () => {
  it('gives the tool output back as the model saw it', () => {
    const ledger = session();
    const payload = objectPayload(ledger, object(ledger, 'function:read_file:6'));
    expect(payloadText(payload)).toBe(CLI_SOURCE);
    expect(payloadSearchText(ledger, object(ledger, 'function:read_file:6'))).toBe(CLI_SOURCE);
  });

  it('gives a conversation back as role-labelled messages', () => {
    const ledger = session();
    const textValue = payloadText(objectPayload(ledger, object(ledger, 'conversation:user:2')));
    expect(
      textValue.startsWith('user: Now list the modules under src and summarise them.\n\nassistant: bash '),
    ).toBe(true);
    expect(textValue).toContain('tool: src/modules/m0.py');
    expect(payloadSearchText(ledger, object(ledger, 'conversation:user:2'))).toContain(
      'cli.py wires build_parser',
    );
  });

  it('shows images inside tool results as a placeholder', () => {
    expect(
      payloadText({
        specVersion: TRANSCRIPT_SPEC_VERSION,
        objectId: 'function:screenshot:1',
        kind: 'function',
        messageIndex: 2,
        partIndex: 0,
        part: {
          type: 'tool-result',
          callId: 'c',
          name: 'screenshot',
          content: [
            { type: 'text', text: 'the page' },
            { type: 'image', ref: 'file-1', source: 'file-id' },
          ],
        },
      }),
    ).toBe('the page\n[image]');
  });
});
