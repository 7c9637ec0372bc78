/** A plain-text table of records, for results printed at the end of a run. */
import { formatRecord } from '../connectors/index.js';

function cell(v: unknown): string {
  const s = typeof v === 'string' ? v : formatRecord(v);
  return s.length > 60 ? s.slice(0, 57) + '...' : s;
}

export function formatTable(rows: readonly unknown[], maxRows = 20): string {
  const shown = rows.slice(0, maxRows);
  const isRecord = (r: unknown): r is Record<string, unknown> => typeof r === 'object' && r !== null && !Array.isArray(r);
  const columns = shown.every(isRecord) && shown.length > 0 ? [...new Set(shown.flatMap((r) => Object.keys(r)))] : ['value'];
  const body = shown.map((r) => columns.map((c) => cell(columns.length === 1 && c === 'value' && !isRecord(r) ? r : (r as Record<string, unknown>)[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ').trimEnd();
  const out = [line(columns), widths.map((w) => '-'.repeat(w)).join('-+-'), ...body.map(line)];
  if (rows.length > shown.length) out.push(`... ${rows.length - shown.length} more row(s)`);
  return out.join('\n');
}
