/**
 * SQL types as the binder reasons about them: the declared types of ast.ts resolved to one shape, with
 * nullability, and the rules that combine them (numeric widening, what compares with what). A column
 * declared in a WATERMARK FOR clause is an event-time attribute (`rowtime`), as in Flink.
 */
import type { DataType } from './ast.js';

export type SqlType =
  | { kind: 'INT' | 'BIGINT' | 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'DATE' | 'NULL'; nullable: boolean }
  | { kind: 'DECIMAL'; precision: number; scale: number; nullable: boolean }
  | { kind: 'TIMESTAMP' | 'TIMESTAMP_LTZ'; precision: number; nullable: boolean; rowtime?: boolean }
  | { kind: 'INTERVAL'; nullable: boolean }
  | { kind: 'ARRAY'; element: SqlType; nullable: boolean }
  | { kind: 'MAP'; key: SqlType; value: SqlType; nullable: boolean }
  | { kind: 'ROW'; fields: { name: string; type: SqlType }[]; nullable: boolean };

/** Milliseconds in each interval unit the engine computes with (months and years have no fixed length). */
export const INTERVAL_UNIT_MS: Readonly<Record<string, number>> = {
  SECOND: 1000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
};

export const DEFAULT_DECIMAL = { precision: 10, scale: 0 };
export const DEFAULT_TIMESTAMP_PRECISION = 3;

/** A declared type, nullable unless `notNull`. */
export function fromDeclared(t: DataType, notNull = false): SqlType {
  const nullable = !notNull;
  switch (t.name) {
    case 'VARCHAR':
      return { kind: 'STRING', nullable };
    case 'DECIMAL':
      return {
        kind: 'DECIMAL',
        precision: t.precision ?? DEFAULT_DECIMAL.precision,
        scale: t.scale ?? DEFAULT_DECIMAL.scale,
        nullable,
      };
    case 'TIMESTAMP':
    case 'TIMESTAMP_LTZ':
      return { kind: t.name, precision: t.precision ?? DEFAULT_TIMESTAMP_PRECISION, nullable };
    case 'ARRAY':
      return { kind: 'ARRAY', element: fromDeclared(t.element), nullable };
    case 'MAP':
      return { kind: 'MAP', key: fromDeclared(t.key), value: fromDeclared(t.value), nullable };
    case 'ROW':
      return { kind: 'ROW', fields: t.fields.map((f) => ({ name: f.name, type: fromDeclared(f.type) })), nullable };
    default:
      return { kind: t.name, nullable };
  }
}

/** How a type reads in a message: as SQL would write it, with NOT NULL when it is so. */
export function typeName(t: SqlType): string {
  const base = spell(t, false);
  return t.nullable || t.kind === 'NULL' ? base : `${base} NOT NULL`;
}

/** A type as a column declaration writes it (no time-attribute marker), e.g. for a sink table's DDL. */
export function declaredTypeName(t: SqlType): string {
  return spell(t, true);
}

/** A type's SQL spelling; `declared`: as DDL takes it (a NULL or INTERVAL type declared as STRING). */
function spell(t: SqlType, declared: boolean): string {
  const inner = (x: SqlType): string => (declared ? spell(x, true) : typeName(x));
  switch (t.kind) {
    case 'DECIMAL':
      return `DECIMAL(${t.precision}, ${t.scale})`;
    case 'TIMESTAMP':
    case 'TIMESTAMP_LTZ':
      return `${t.kind}(${t.precision})${t.rowtime && !declared ? ' *ROWTIME*' : ''}`;
    case 'ARRAY':
      return `ARRAY<${inner(t.element)}>`;
    case 'MAP':
      return `MAP<${inner(t.key)}, ${inner(t.value)}>`;
    case 'ROW':
      return `ROW<${t.fields.map((f) => `${f.name} ${inner(f.type)}`).join(', ')}>`;
    case 'NULL':
    case 'INTERVAL':
      return declared ? 'STRING' : t.kind;
    default:
      return t.kind;
  }
}

const NUMERIC_RANK: Record<string, number> = { INT: 1, BIGINT: 2, DECIMAL: 3, DOUBLE: 4 };

export const isNumeric = (t: SqlType): boolean => t.kind in NUMERIC_RANK;
export const isTime = (t: SqlType): boolean =>
  t.kind === 'TIMESTAMP' || t.kind === 'TIMESTAMP_LTZ' || t.kind === 'DATE';

export function withNullable(t: SqlType, nullable: boolean): SqlType {
  return { ...t, nullable } as SqlType;
}

/** The type both numeric operands widen to (INT < BIGINT < DECIMAL < DOUBLE). */
export function widenNumeric(a: SqlType, b: SqlType): SqlType {
  const nullable = a.nullable || b.nullable;
  if (a.kind === 'DECIMAL' && b.kind === 'DECIMAL') {
    const scale = Math.max(a.scale, b.scale);
    return {
      kind: 'DECIMAL',
      precision: Math.min(38, Math.max(a.precision - a.scale, b.precision - b.scale) + scale + 1),
      scale,
      nullable,
    };
  }
  const wider = NUMERIC_RANK[a.kind]! >= NUMERIC_RANK[b.kind]! ? a : b;
  return withNullable(wider, nullable);
}

/** Whether values of the two types can be compared with = < and the like (NULL compares with anything). */
export function comparable(a: SqlType, b: SqlType): boolean {
  if (a.kind === 'NULL' || b.kind === 'NULL') return true;
  if (isNumeric(a) && isNumeric(b)) return true;
  if (isTime(a) && isTime(b)) return true;
  return a.kind === b.kind && a.kind !== 'MAP' && a.kind !== 'ARRAY' && a.kind !== 'ROW';
}

/** The type of a CASE or COALESCE over these branches, or undefined when they do not share one. */
export function commonType(types: readonly SqlType[]): SqlType | undefined {
  const known = types.filter((t) => t.kind !== 'NULL');
  const nullable = types.some((t) => t.nullable || t.kind === 'NULL');
  if (known.length === 0) return { kind: 'NULL', nullable: true };
  let acc = known[0]!;
  for (const t of known.slice(1)) {
    if (isNumeric(acc) && isNumeric(t)) acc = widenNumeric(acc, t);
    else if (acc.kind !== t.kind) return undefined;
  }
  return withNullable(acc, nullable);
}
