/**
 * Rows from connectors whose values are not yet the columns' types. CSV for file tables ('format' =
 * 'csv'): a line split into the table's physical columns (RFC 4180: fields in double quotes may hold the
 * delimiter, quotes doubled, no line breaks inside), each field read as its column's type (an empty
 * field is NULL), and a row written back the same way. PostgreSQL rows: numbers and times as numbers.
 */
import type { Field } from './logical.js';
import { SQL_RUNTIME, SqlRuntimeError } from './sql-runtime.js';

type Row = Record<string, unknown>;

function split(line: string, delimiter: string): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    if (line[i] === '"') {
      let v = '';
      i++;
      for (;;) {
        const q = line.indexOf('"', i);
        if (q === -1) throw new SqlRuntimeError(`CSV: a quoted field is not closed: ${line.slice(0, 80)}`);
        v += line.slice(i, q);
        if (line[q + 1] === '"') {
          v += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      out.push(v);
    } else {
      const d = line.indexOf(delimiter, i);
      out.push(line.slice(i, d === -1 ? undefined : d));
      i = d === -1 ? line.length : d;
    }
    if (i >= line.length) return out;
    i += delimiter.length;
    if (i === line.length) {
      out.push('');
      return out;
    }
  }
}

function read(text: string, f: Field): unknown {
  if (text === '') return null;
  switch (f.type.kind) {
    case 'INT':
    case 'BIGINT':
      return SQL_RUNTIME.toInt(text);
    case 'DOUBLE':
    case 'DECIMAL':
      return SQL_RUNTIME.toNumber(text);
    case 'BOOLEAN':
      return SQL_RUNTIME.toBoolean(text);
    case 'TIMESTAMP':
    case 'TIMESTAMP_LTZ':
      return /^\d+$/.test(text) ? Number(text) : SQL_RUNTIME.toTimestampOrFail(text);
    default:
      return text;
  }
}

/**
 * A function that gives a PostgreSQL row's values their columns' types: pg hands BIGINT and NUMERIC
 * over as strings (to keep their precision) and timestamps as Dates.
 */
export function pgRowReader(columns: readonly Field[]): (row: Row) => Row {
  const numeric = columns
    .filter(
      (c) => c.type.kind === 'BIGINT' || c.type.kind === 'DECIMAL' || c.type.kind === 'DOUBLE' || c.type.kind === 'INT',
    )
    .map((c) => c.name);
  const times = columns
    .filter((c) => c.type.kind === 'TIMESTAMP' || c.type.kind === 'TIMESTAMP_LTZ')
    .map((c) => c.name);
  return (row) => {
    for (const n of numeric) if (typeof row[n] === 'string') row[n] = Number(row[n]);
    for (const n of times) if (row[n] instanceof Date) row[n] = (row[n] as Date).getTime();
    return row;
  };
}

/** A function from a CSV line to a row of `columns`. */
export function csvReader(columns: readonly Field[], delimiter = ','): (line: string) => Row {
  return (line) => {
    const parts = split(line.endsWith('\r') ? line.slice(0, -1) : line, delimiter);
    const row: Row = {};
    columns.forEach((c, i) => (row[c.name] = read(parts[i] ?? '', c)));
    return row;
  };
}

/** A function from a row of `columns` to a CSV line (quoted where it must be; NULL as an empty field). */
export function csvWriter(columns: readonly Field[], delimiter = ','): (row: Row) => string {
  const quote = (s: string): string =>
    s.includes(delimiter) || s.includes('"') || s.includes('\n') || s.includes('\r')
      ? `"${s.replaceAll('"', '""')}"`
      : s;
  return (row) =>
    columns
      .map((c) => {
        const v = row[c.name];
        if (v == null) return '';
        if (c.type.kind === 'TIMESTAMP' || c.type.kind === 'TIMESTAMP_LTZ')
          return SQL_RUNTIME.formatTimestamp(v as number);
        return quote(String(v));
      })
      .join(delimiter);
}
