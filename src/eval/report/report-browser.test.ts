/**
 * The report in a real headless Chromium: the charts lay out with real geometry, there are no
 * console errors, and a screenshot is left for a human to look at.
 */

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runsInCi } from '../../testing/ci-environment.js';
import { MAX_TIMELINES, renderReport } from './render-report.js';
import { sampleSummary } from './sample-summary.js';

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
const missing = `${CHROMIUM} not found: run .ci/install-chromium.sh`;
function parsePoints(points: string | null): Array<[number, number]> {
  return (points ?? '')
    .split(' ')
    .filter(Boolean)
    .map((pair) => pair.split(',').map(Number) as [number, number]);
}

type Outline = Array<[number, number]>;

/** What the outline of an SVG text element needs of it (the tests are typed without the DOM library). */
interface SvgText {
  getBBox(): { x: number; y: number; width: number; height: number };
  getScreenCTM(): { a: number; b: number; c: number; d: number; e: number; f: number } | null;
}

/** Whether two convex outlines are apart: some edge's normal separates their projections. */
function separated(first: Outline, second: Outline): boolean {
  for (const outline of [first, second]) {
    for (let index = 0; index < outline.length; index += 1) {
      const [x1, y1] = outline[index]!;
      const [x2, y2] = outline[(index + 1) % outline.length]!;
      const normal: [number, number] = [y1 - y2, x2 - x1];
      const project = (points: Outline) => points.map(([x, y]) => x * normal[0] + y * normal[1]);
      const a = project(first);
      const b = project(second);
      if (Math.max(...a) < Math.min(...b) || Math.max(...b) < Math.min(...a)) return true;
    }
  }
  return false;
}

/** Overwritten on every run, so the latest report can be looked at without piling up files. */
const SCREENSHOT = join(tmpdir(), 'selfgc-report-screenshots', 'report.png');

// On CI a missing Chromium fails the suite (in beforeAll) instead of skipping it.
describe.skipIf(!available && !runsInCi())(
  `report in Chromium${available ? '' : ` (${runsInCi() ? 'failing' : 'skipped'}: ${missing})`}`,
  () => {
    const summary = sampleSummary();
    const problems: string[] = [];
    let workDirectory = '';
    let context: BrowserContext | undefined;
    let page: Page;

    beforeAll(async () => {
      if (!available) throw new Error(missing);
      workDirectory = mkdtempSync(join(tmpdir(), 'selfgc-report-'));
      const htmlPath = join(workDirectory, 'report.html');
      writeFileSync(htmlPath, renderReport(summary));
      context = await chromium.launchPersistentContext(join(workDirectory, 'profile'), {
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
        viewport: { width: 1200, height: 900 },
      });
      page = context.pages()[0] ?? (await context.newPage());
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page: ${error.message}`));
      page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()}`));
      await page.goto(pathToFileURL(htmlPath).href, { waitUntil: 'load' });
    });

    afterAll(async () => {
      await context?.close();
      if (workDirectory) rmSync(workDirectory, { recursive: true, force: true });
    });

    it('draws the tradeoff chart with one non-degenerate polyline per strategy inside the viewBox', async () => {
      const svg = page.locator('svg[data-chart="tradeoff"]');
      const svgBox = await svg.boundingBox();
      expect(svgBox?.width).toBeGreaterThan(300);
      expect(svgBox?.height).toBeGreaterThan(150);
      const [, , viewWidth = 0, viewHeight = 0] = ((await svg.getAttribute('viewBox')) ?? '')
        .split(' ')
        .map(Number);
      const lines = svg.locator('polyline[data-strategy]');
      expect(await lines.count()).toBe(summary.cutMode.length);
      for (const [index, result] of summary.cutMode.entries()) {
        const line = lines.nth(index);
        expect(await line.getAttribute('data-strategy')).toBe(result.strategy);
        const points = parsePoints(await line.getAttribute('points'));
        expect(points).toHaveLength(result.sweep.length);
        const xs = points.map(([x]) => x);
        expect(new Set(xs).size).toBe(xs.length);
        for (const [x, y] of points) {
          expect(x).toBeGreaterThan(0);
          expect(x).toBeLessThan(viewWidth);
          expect(y).toBeGreaterThan(0);
          expect(y).toBeLessThan(viewHeight);
        }
        // Drawn where the data says: the best sweep point is the highest (SVG y grows downwards).
        const sorted = [...result.sweep].sort((a, b) => a.pruneRate - b.pruneRate);
        const best = Math.max(...sorted.map((point) => point.strictNoImpact.value));
        const highest = Math.min(...points.map(([, y]) => y));
        sorted.forEach((point, at) => {
          if (point.strictNoImpact.value === best) expect(points[at]![1]).toBe(highest);
        });
        const box = await line.boundingBox();
        expect(box?.width).toBeGreaterThan(0);
        expect(box!.x).toBeGreaterThanOrEqual(svgBox!.x);
        expect(box!.x + box!.width).toBeLessThanOrEqual(svgBox!.x + svgBox!.width);
      }
      expect(await svg.locator('polyline[data-strategy="oracle"]').getAttribute('stroke-dasharray')).not.toBe(
        '',
      );
      expect(await svg.locator('[data-label="upper-bound"]').textContent()).toBe('upper bound');
      expect(await svg.locator('[data-own]').count()).toBe(summary.cutMode.length);
    });

    it('draws cost bars with positive heights proportional to the data', async () => {
      const bars = page.locator('svg[data-chart="cost"] rect[data-bar]');
      expect(await bars.count()).toBe(summary.sessionMode.length);
      // Rendered heights, in units of the rendered distance from the baseline to the 1.0 reference line.
      const reference = await page.locator('svg[data-chart="cost"] [data-reference]').boundingBox();
      for (const [index, result] of summary.sessionMode.entries()) {
        const bar = bars.nth(index);
        expect(await bar.getAttribute('data-bar')).toBe(result.strategy);
        const box = await bar.boundingBox();
        expect(box?.height).toBeGreaterThan(0);
        const baseline = box!.y + box!.height;
        expect(box!.height / (baseline - reference!.y)).toBeCloseTo(result.costRelative, 2);
      }
    });

    it('names every cost bar legibly: labels inside the chart, none over another', async () => {
      const svgBox = (await page.locator('svg[data-chart="cost"]').boundingBox())!;
      const labels = page.locator('svg[data-chart="cost"] [data-bar-label]');
      expect(await labels.allTextContents()).toEqual(summary.sessionMode.map((result) => result.strategy));
      // Each label's outline on screen: its text box carried through its own transform (the
      // names may be set at a slant, where screen-aligned boxes would overlap at the corners).
      const outlines = await labels.evaluateAll((nodes) =>
        nodes.map((node) => {
          const text = node as unknown as SvgText;
          const box = text.getBBox();
          const m = text.getScreenCTM()!;
          const at = (x: number, y: number): [number, number] => [
            m.a * x + m.c * y + m.e,
            m.b * x + m.d * y + m.f,
          ];
          const right = box.x + box.width;
          const bottom = box.y + box.height;
          return [at(box.x, box.y), at(right, box.y), at(right, bottom), at(box.x, bottom)];
        }),
      );
      for (const outline of outlines) {
        for (const [x, y] of outline) {
          expect(x).toBeGreaterThanOrEqual(svgBox.x);
          expect(x).toBeLessThanOrEqual(svgBox.x + svgBox.width);
          expect(y).toBeLessThanOrEqual(svgBox.y + svgBox.height);
        }
      }
      for (let index = 1; index < outlines.length; index += 1)
        expect(separated(outlines[index - 1]!, outlines[index]!)).toBe(true);
    });

    it('draws one timeline per session, the longest first, for selfgc', async () => {
      const selfgc = summary.sessionMode.find((result) => result.strategy === 'selfgc')!;
      const longest = [...selfgc.timelines]
        .sort((a, b) => b.viewTokens.length - a.viewTokens.length)
        .slice(0, MAX_TIMELINES);
      const timelines = page.locator('svg[data-chart="timeline"]');
      expect(await timelines.count()).toBe(longest.length);
      for (const [index, expected] of longest.entries()) {
        const timeline = timelines.nth(index);
        expect(await timeline.getAttribute('data-session')).toBe(expected.session);
        expect((await timeline.boundingBox())?.height).toBeGreaterThan(50);
        const view = timeline.locator('polyline[data-series="view"]');
        expect(parsePoints(await view.getAttribute('points'))).toHaveLength(expected.viewTokens.length);
        expect((await view.boundingBox())?.width).toBeGreaterThan(0);
        const transcript = await timeline
          .locator('polyline[data-series="transcript"]')
          .getAttribute('points');
        expect(parsePoints(transcript)).toHaveLength(expected.transcriptTokens.length);
        expect(await timeline.locator('[data-commit]').count()).toBe(expected.commitCalls.length);
        expect(await timeline.locator('[data-series="window"]').count()).toBe(1);
      }
    });

    it('fits the page width: no table or chart makes the page scroll sideways', async () => {
      const { scrollWidth, clientWidth } = await page.locator('html').evaluate((root) => {
        const { scrollWidth, clientWidth } = root as unknown as { scrollWidth: number; clientWidth: number };
        return { scrollWidth, clientWidth };
      });
      expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    });

    it('loads without console errors or failed requests and leaves a screenshot', async () => {
      expect(problems).toEqual([]);
      mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      const png = readFileSync(SCREENSHOT);
      expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
      expect(png.length).toBeGreaterThan(20_000);
    });
  },
);
