/**
 * Whether the tests run under CI, where a suite that cannot run (a service down, no Chromium, no
 * agent CLI or network namespace) must fail instead of skipping. One reading for every suite: `CI`
 * set to anything but empty, `false` or `0`, as CI services set it (`true`, `1`).
 */
export function runsInCi(): boolean {
  const value = process.env.CI;
  return value !== undefined && value !== '' && value !== 'false' && value !== '0';
}
