/** Building the SQL the PostgreSQL connector sends: quoted identifiers, multi-row INSERT and upsert. */

/** "schema"."table" from schema.table, each part quoted. */
export function quoteIdent(name: string): string {
  return name
    .split('.')
    .map((p) => `"${p.replace(/"/g, '""')}"`)
    .join('.');
}

/** One INSERT of `rows` rows over `columns`, upserting by `primaryKey` when given; parameters $1.. */
export function insertStatement(
  table: string,
  columns: readonly string[],
  rows: number,
  primaryKey?: readonly string[],
): string {
  const values: string[] = [];
  for (let r = 0, p = 1; r < rows; r++) {
    const row: string[] = [];
    for (let c = 0; c < columns.length; c++) row.push(`$${p++}`);
    values.push(`(${row.join(',')})`);
  }
  let sql = `INSERT INTO ${quoteIdent(table)} (${columns.map(quoteIdent).join(',')}) VALUES ${values.join(',')}`;
  if (primaryKey) {
    const rest = columns.filter((c) => !primaryKey.includes(c));
    sql +=
      ` ON CONFLICT (${primaryKey.map(quoteIdent).join(',')}) ` +
      (rest.length === 0
        ? 'DO NOTHING'
        : `DO UPDATE SET ${rest.map((c) => `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`).join(', ')}`);
  }
  return sql;
}

/** The most rows one statement may carry: PostgreSQL takes at most 65535 parameters. */
export function maxRowsPerStatement(columns: number, wanted: number): number {
  return Math.max(1, Math.min(wanted, Math.floor(65_535 / Math.max(1, columns))));
}
