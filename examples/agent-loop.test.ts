import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type AgentLoopEvent, runAgentLoop } from './agent-loop/run-agent-loop.js';
import { formatEvent, formatSummary } from './agent-loop.js';

const root = fileURLToPath(new URL('..', import.meta.url));

describe('the example agent loop', () => {
  it('works 60 turns over this repository under a 6,000-token window and recovers a folded file exactly', async () => {
    const events: AgentLoopEvent[] = [];
    const summary = await runAgentLoop({
      root,
      turns: 60,
      window: 6000,
      expandAt: 25,
      onEvent: (event) => events.push(event),
    });

    expect(summary.turns).toBe(60);
    expect(summary.transcriptTokens).toBeGreaterThan(2 * summary.window);
    expect(summary.maxViewTokens).toBeLessThanOrEqual(summary.window);
    expect(summary.warnings.filter((warning) => warning.startsWith('over-window'))).toEqual([]);
    expect(summary.commits.length).toBeGreaterThanOrEqual(1);
    for (const commit of summary.commits) expect(commit.tokensAfter).toBeLessThan(commit.tokensBefore);

    const recovered = summary.recovered;
    expect(recovered?.objectId).toMatch(/^function:read_file:\d+$/);
    expect(recovered?.path).toMatch(/^src\/.+\.ts$/);
    expect(recovered?.content.length).toBeGreaterThan(0);
    expect(recovered?.exact).toBe(true);
    expect(recovered?.inNextRequest).toBe(true);

    const lines = events.map(formatEvent);
    expect(lines.filter((line) => / commit c\d+-/.test(line))).toHaveLength(summary.commits.length);
    expect(lines.find((line) => line.includes(' expand '))).toMatch(
      /expand function:read_file:\d+ → src\/.+, [\d,]+ bytes, byte-exact$/,
    );
    expect(formatSummary(summary).join('\n')).toContain('byte-exact, sent whole in the next request');
  });
});
