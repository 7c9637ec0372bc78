/**
 * A plain-text table of records, for results printed at the end of a run: rows sorted by their
 * columns (left to right), event-time columns shown as ISO times. JSON output keeps the raw values.
 */
import { formatRecord } from '../connectors/index.js';

/** Columns that hold event times, by name, as windows, SQL (window_start) and the connectors produce them. */
const TIME_COLUMN = /^(start|end|ts|windowstart|windowend)$|_(start|end)$|(time|timestamp|at)$/i;
// Epoch milliseconds from 2001-09-09 to 2100-01-01: a smaller number under such a name is a count.
const MIN_EPOCH_MS = 1e12;
const MAX_EPOCH_MS = 4_102_444_800_000;

export function isEventTimeColumn(name: string, v: unknown): v is number {
  return (
    typeof v === 'number' && Number.isInteger(v) && v >= MIN_EPOCH_MS && v < MAX_EPOCH_MS && TIME_COLUMN.test(name)
  );
}

function cell(column: string, v: unknown): string {
  if (isEventTimeColumn(column, v)) return new Date(v).toISOString();
  const s = typeof v === 'string' ? v : formatRecord(v);
  return s.length > 60 ? s.slice(0, 57) + '...' : s;
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (a === b) return 0;
  if (a === undefined) return -1;
  if (b === undefined) return 1;
  const sa = typeof a === 'string' ? a : formatRecord(a);
  const sb = typeof b === 'string' ? b : formatRecord(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

const isRecord = (r: unknown): r is Record<string, unknown> => typeof r === 'object' && r !== null && !Array.isArray(r);

/** `maxRows` 0 prints every row. */
export function formatTable(rows: readonly unknown[], maxRows = 20, options: { sort?: boolean } = {}): string {
  const records = rows.length > 0 && rows.every(isRecord);
  const columns = records ? [...new Set(rows.flatMap((r) => Object.keys(r as object)))] : ['value'];
  const valueOf = (r: unknown, c: string): unknown => (records ? (r as Record<string, unknown>)[c] : r);
  const ordered =
    options.sort === false
      ? rows
      : [...rows].sort((a, b) => {
          for (const c of columns) {
            const d = compare(valueOf(a, c), valueOf(b, c));
            if (d !== 0) return d;
          }
          return 0;
        });
  const shown = maxRows > 0 ? ordered.slice(0, maxRows) : ordered;
  const body = shown.map((r) => columns.map((c) => cell(c, valueOf(r, c))));
  const widths = columns.map((c, i) => Math.max(c.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join(' | ')
      .trimEnd();
  const out = [line(columns), widths.map((w) => '-'.repeat(w)).join('-+-'), ...body.map(line)];
  if (rows.length > shown.length) out.push(`... ${rows.length - shown.length} more row(s) (--max-rows 0 prints all)`);
  return out.join('\n');
}
