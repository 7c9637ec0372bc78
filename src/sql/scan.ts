/**
 * A catalog table as the leaf of a plan: its columns typed (computed ones against the physical ones),
 * its event-time attribute and watermark delay read from WATERMARK FOR, its connector and options.
 */
import type { Expr, Statement } from './ast.js';
import { SqlError } from './errors.js';
import { fieldRef, mapChildren } from './expressions.js';
import type { Field, ScanNode } from './logical.js';
import { printExpr } from './printer.js';
import { fromDeclared, INTERVAL_UNIT_MS, type SqlType } from './types.js';
import { typeOf } from './typing.js';

type CreateTable = Extract<Statement, { kind: 'createTable' }>;

export function bindTable(t: CreateTable): ScanNode {
  const table = t.name.parts.join('.');
  const rowtime = t.watermark?.column;
  const physical: Field[] = [];
  for (const c of t.columns) {
    if (c.computed || !c.type) continue;
    const type = fromDeclared(c.type, c.notNull);
    physical.push({ name: c.name, type: c.name === rowtime ? ({ ...type, rowtime: true } as SqlType) : type });
  }
  const scope = physical.map((f) => ({ qualifier: table, name: f.name, type: f.type }));
  const computed: Record<string, Expr> = {};
  const columns: Field[] = [];
  for (const c of t.columns) {
    if (!c.computed) {
      columns.push(physical.find((f) => f.name === c.name)!);
      continue;
    }
    let type = typeOf(c.computed, scope);
    if (c.name === rowtime) type = { ...type, rowtime: true } as SqlType;
    computed[c.name] = lastPart(c.computed);
    columns.push({ name: c.name, type });
  }
  const options: Record<string, string> = {};
  for (const o of t.options) if (o.key !== 'connector') options[o.key] = o.value;
  const connector = t.options.find((o) => o.key === 'connector')?.value ?? '';
  const watermark = t.watermark
    ? { column: t.watermark.column, delayMs: watermarkDelay(t.watermark.column, t.watermark.expr) }
    : undefined;
  return {
    kind: 'scan',
    table,
    connector,
    options,
    columns,
    computed,
    ...(watermark ? { watermark } : {}),
    fields: columns,
  };
}

/** `ts` is no delay; `ts - INTERVAL 'n' unit` is n units. Anything else is refused at the watermark. */
function watermarkDelay(column: string, e: Expr): number {
  const isColumn = (x: Expr): boolean => x.kind === 'column' && x.name.parts.length === 1 && x.name.parts[0] === column;
  if (isColumn(e)) return 0;
  if (e.kind === 'binary' && e.op === '-' && isColumn(e.left) && e.right.kind === 'interval') {
    const ms = Number(e.right.value) * (INTERVAL_UNIT_MS[e.right.unit] ?? NaN);
    if (Number.isInteger(ms) && ms >= 0) return ms;
  }
  throw new SqlError(
    `WATERMARK FOR ${column} AS ${printExpr(e)}: a watermark is written ${column} or ${column} - INTERVAL 'n' SECOND`,
    e.at,
  );
}

/** A scan's rows as a projection over its physical columns: computed columns become their expressions. */
export function scanProjection(scan: ScanNode): { name: string; expr: Expr }[] {
  return scan.columns.map((c) => ({ name: c.name, expr: scan.computed[c.name] ?? fieldRef(c.name) }));
}

/** A computed column's expression over field names (a table-qualified reference names its column). */
function lastPart(e: Expr): Expr {
  return e.kind === 'column' ? fieldRef(e.name.parts.at(-1)!, e.at) : mapChildren(e, lastPart);
}
