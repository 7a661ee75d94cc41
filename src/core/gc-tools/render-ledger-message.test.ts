import { describe, expect, it } from 'vitest';
import { indexTranscript } from '../ledger.js';
import { projectView } from '../project-view.js';
import { rehearsePlan } from '../rehearse-plan.js';
import { threeRequestSession } from '../testing/sample-session.js';
import { approximateTokenCounter } from '../tokens.js';
import { messageText } from '../transcript.js';
import { ledgerRows } from './ledger-rows.js';
import { budgetUsedPct, renderLedgerMessage } from './render-ledger-message.js';

function governedSession() {
  const ledger = indexTranscript(threeRequestSession(), { tokenCounter: approximateTokenCounter });
  const { stateAfter } = rehearsePlan(
    ledger,
    {},
    {
      planner: 'test',
      operations: [
        { objectId: 'function:bash:5', operation: 'fold', reason: 'listing read' },
        { objectId: 'function:bash:2', operation: 'prune', reason: 'failure fixed' },
      ],
    },
  );
  return { ledger, state: stateAfter };
}

describe('ledgerRows', () => {
  it('shows states, protection, steps since use and heads, never whole payloads', () => {
    const { ledger, state } = governedSession();
    const rows = ledgerRows(ledger, state, { protectFrom: 18, headChars: 40 });
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get('system:1')).toMatchObject({ kind: 'system', protection: 'system', state: 'live' });
    expect(byId.get('conversation:user:1')).toMatchObject({ protection: 'pinned' });
    expect(byId.get('conversation:user:3')).toMatchObject({ protection: 'latest-turn' });
    expect(byId.get('function:read_file:7')).toMatchObject({
      protection: 'latest-turn',
      call: 'read_file path=cli.py',
    });
    expect(byId.get('function:bash:2')).toMatchObject({ state: 'prune', isError: true });
    const folded = byId.get('function:bash:5')!;
    expect(folded.state).toBe('fold');
    expect(folded.tokens).toBe(approximateTokenCounter.count(state['function:bash:5']!.replacement));
    expect(folded.head).toBe('src/modules/m0.py 1000 bytes src/module…');
    expect(folded.protection).toBeUndefined();
    // parser.py's parse_file was last mentioned by the assistant at message 16; one step followed.
    expect(byId.get('function:read_file:1')!.stepsSinceUse).toBe(1);
    // The failing run's tests/test_parser.py was last used by the re-run at message 8; five steps followed.
    expect(byId.get('function:bash:2')!.stepsSinceUse).toBe(5);
  });

  it('marks what the agent already consumed: the first of its own messages that used the content', () => {
    const { ledger, state } = governedSession();
    const rows = ledgerRows(ledger, state, { protectFrom: 18 });
    for (const row of rows) {
      const object = ledger.get(row.id)!;
      const own = object.references.filter((index) => ledger.messages[index]?.role === 'assistant');
      expect(row.consumedAt).toBe(own[0]);
    }
    // parser.py's read was used by the agent (it edited parse_file); the latest read not yet.
    expect(rows.find((row) => row.id === 'function:read_file:1')?.consumedAt).toBeGreaterThan(3);
    expect(rows.find((row) => row.id === 'function:read_file:7')?.consumedAt).toBeUndefined();
    const lines = messageText(renderLedgerMessage(ledger, state, 4000)).split('\n');
    expect(lines.find((line) => line.startsWith('function:read_file:1 '))).toMatch(/ live,consumed \| /);
    expect(lines.find((line) => line.startsWith('function:read_file:7 '))).not.toContain('consumed');
  });
});

describe('renderLedgerMessage', () => {
  it('is one user-role text message with the budget and one line per object not pruned', () => {
    const { ledger, state } = governedSession();
    const message = renderLedgerMessage(ledger, state, 4000);
    expect(message.role).toBe('user');
    const lines = messageText(message).split('\n');
    const viewTokens = projectView(ledger, state).tokens;
    expect(lines[0]).toBe(
      `[context ledger] budget_used_pct=${budgetUsedPct(viewTokens, 4000)} view_tokens=${viewTokens} window=4000`,
    );
    expect(lines).toContain(
      `system:1 system ${ledger.get('system:1')!.tokens} live,system | You are a coding agent working in /repo. Use the tools to read and edit files.`,
    );
    expect(lines.find((line) => line.startsWith('function:bash:5 '))).toMatch(
      /^function:bash:5 function \d+ fold \| bash command=ls -R src$/,
    );
    expect(lines.find((line) => line.startsWith('conversation:user:1 '))).toMatch(
      / live,pinned \| The test tests\/test_parser\.py fails/,
    );
    expect(lines.find((line) => line.startsWith('function:read_file:7 '))).toMatch(
      / live,latest-turn \| read_file path=cli\.py$/,
    );
    expect(lines.some((line) => line.startsWith('function:bash:2 '))).toBe(false);
    expect(lines.at(-1)).toMatch(/^Tools: fold\(id\)/);
  });

  it('lists the largest objects first up to the limit and counts the rest', () => {
    const { ledger, state } = governedSession();
    const lines = messageText(renderLedgerMessage(ledger, state, 4000, { maxObjects: 3 })).split('\n');
    const objectLines = lines.slice(1, -2);
    expect(objectLines).toHaveLength(3);
    // conversation:user:1's span holds the whole first request's work: the largest object.
    expect(objectLines[0]).toMatch(/^conversation:user:1 /);
    expect(lines.at(-2)).toMatch(/^\(7 smaller objects not listed, \d+ tokens\)$/);
  });

  it('reports the share of the window in whole percent', () => {
    expect(budgetUsedPct(1234, 10_000)).toBe(12);
    expect(budgetUsedPct(9_999, 10_000)).toBe(100);
    expect(budgetUsedPct(10, 0)).toBe(100);
  });
});
