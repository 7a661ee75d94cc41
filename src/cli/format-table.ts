/** Rows as aligned columns (the first row is the header), one line each, no trailing spaces. */
export function formatTable(rows: ReadonlyArray<readonly string[]>): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map(
      (row) =>
        `${row
          .map((cell, column) => cell.padEnd(widths[column]!))
          .join('  ')
          .trimEnd()}\n`,
    )
    .join('');
}
