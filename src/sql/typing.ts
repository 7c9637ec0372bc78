/**
 * The types of expressions: column references resolved against a scope (the columns a FROM clause
 * brings, qualified by their table or alias), operators and functions checked, and every refusal an
 * SqlError at the offending node. Aggregates are typed here too; where they may stand (GROUP BY
 * queries, OVER windows) is the binder's to decide.
 */
import type { Expr } from './ast.js';
import { SqlError } from './errors.js';
import { printExpr } from './printer.js';
import {
  commonType,
  comparable,
  fromDeclared,
  isNumeric,
  isTime,
  typeName,
  widenNumeric,
  withNullable,
  type SqlType,
} from './types.js';

export interface ScopeColumn {
  /** The table or alias that brings it; a reference may name it (`b.price`) or not (`price`). */
  qualifier: string;
  name: string;
  type: SqlType;
}

export type Scope = readonly ScopeColumn[];

const BOOLEAN: SqlType = { kind: 'BOOLEAN', nullable: false };
const nullableIf = (t: SqlType, ...from: SqlType[]): SqlType =>
  withNullable(t, t.nullable || from.some((f) => f.nullable));

/** The functions a query may call: each checks its arguments' types and gives its result's. */
interface SqlFunction {
  aggregate: boolean;
  type(args: SqlType[], call: Extract<Expr, { kind: 'call' }>): SqlType;
}

function arity(call: Extract<Expr, { kind: 'call' }>, min: number, max = min): void {
  const n = call.args.length;
  if (n < min || n > max)
    throw new SqlError(
      `${call.name} takes ${min === max ? min : `${min} to ${max}`} argument${max === 1 ? '' : 's'}, not ${n}`,
      call.at,
    );
}

function wants(
  call: Extract<Expr, { kind: 'call' }>,
  i: number,
  t: SqlType,
  ok: (t: SqlType) => boolean,
  what: string,
): void {
  if (t.kind !== 'NULL' && !ok(t))
    throw new SqlError(
      `${call.name}: argument ${i + 1} (${printExpr(call.args[i]!)}) is ${typeName(t)}; it must be ${what}`,
      call.args[i]!.at,
    );
}

const numeric =
  (f: (t: SqlType) => SqlType): SqlFunction['type'] =>
  (args, call) => {
    arity(call, 1);
    wants(call, 0, args[0]!, isNumeric, 'numeric');
    return f(args[0]!);
  };

const str = (nullable: boolean): SqlType => ({ kind: 'STRING', nullable });
const isString = (t: SqlType): boolean => t.kind === 'STRING';

const isInt = (t: SqlType): boolean => t.kind === 'INT' || t.kind === 'BIGINT';

/** A part of a timestamp (YEAR(ts), HOUR(ts), ...): a number. */
function datePart(args: SqlType[], call: Extract<Expr, { kind: 'call' }>): SqlType {
  arity(call, 1);
  wants(call, 0, args[0]!, isTime, 'a timestamp');
  return { kind: 'BIGINT', nullable: args[0]!.nullable };
}

/** A function of `min` to `max` strings, giving `result` (a string by default). */
function strings(min: number, max: number, result?: (nullable: boolean) => SqlType): SqlFunction['type'] {
  return (args, call) => {
    arity(call, min, max);
    args.forEach((a, i) => wants(call, i, a, isString, 'a string'));
    const nullable = args.some((a) => a.nullable);
    return result ? result(nullable) : str(nullable);
  };
}

function pad(args: SqlType[], call: Extract<Expr, { kind: 'call' }>): SqlType {
  arity(call, 3);
  wants(call, 0, args[0]!, isString, 'a string');
  wants(call, 1, args[1]!, isInt, 'INT');
  wants(call, 2, args[2]!, isString, 'a string');
  return str(args.some((a) => a.nullable));
}

function substringType(args: SqlType[], call: Extract<Expr, { kind: 'call' }>): SqlType {
  arity(call, 2, 3);
  wants(call, 0, args[0]!, isString, 'a string');
  args.slice(1).forEach((a, i) => wants(call, i + 1, a, (t) => t.kind === 'INT' || t.kind === 'BIGINT', 'INT'));
  return str(args.some((a) => a.nullable));
}

export const FUNCTIONS: Record<string, SqlFunction> = {
  COUNT: { aggregate: true, type: (_args, call) => (arity(call, 1), { kind: 'BIGINT', nullable: false }) },
  SUM: {
    aggregate: true,
    type: numeric((t) => withNullable(t.kind === 'INT' ? { kind: 'BIGINT', nullable: true } : t, true)),
  },
  AVG: {
    aggregate: true,
    type: numeric((t) => withNullable(t.kind === 'DECIMAL' ? t : { kind: 'DOUBLE', nullable: true }, true)),
  },
  MIN: { aggregate: true, type: (args, call) => (arity(call, 1), withNullable(args[0]!, true)) },
  MAX: { aggregate: true, type: (args, call) => (arity(call, 1), withNullable(args[0]!, true)) },
  ROW_NUMBER: { aggregate: true, type: (_args, call) => (arity(call, 0), { kind: 'BIGINT', nullable: false }) },
  ABS: { aggregate: false, type: numeric((t) => t) },
  FLOOR: { aggregate: false, type: numeric((t) => t) },
  CEIL: { aggregate: false, type: numeric((t) => t) },
  MOD: {
    aggregate: false,
    type: (args, call) => {
      arity(call, 2);
      args.forEach((a, i) => wants(call, i, a, (t) => t.kind === 'INT' || t.kind === 'BIGINT', 'INT or BIGINT'));
      return widenNumeric(args[0]!, args[1]!);
    },
  },
  UPPER: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 1),
      wants(call, 0, args[0]!, (t) => t.kind === 'STRING', 'a string'),
      str(args[0]!.nullable)
    ),
  },
  LOWER: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 1),
      wants(call, 0, args[0]!, (t) => t.kind === 'STRING', 'a string'),
      str(args[0]!.nullable)
    ),
  },
  CHAR_LENGTH: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 1),
      wants(call, 0, args[0]!, (t) => t.kind === 'STRING', 'a string'),
      { kind: 'INT', nullable: args[0]!.nullable }
    ),
  },
  CONCAT: { aggregate: false, type: (args, call) => (arity(call, 1, Infinity), str(args.some((a) => a.nullable))) },
  COALESCE: {
    aggregate: false,
    type: (args, call) => {
      arity(call, 1, Infinity);
      const t = commonType(args);
      if (!t)
        throw new SqlError(`COALESCE: its arguments have no common type (${args.map(typeName).join(', ')})`, call.at);
      return withNullable(
        t,
        args.every((a) => a.nullable),
      );
    },
  },
  SQRT: { aggregate: false, type: numeric(() => ({ kind: 'DOUBLE', nullable: true })) },
  LN: { aggregate: false, type: numeric(() => ({ kind: 'DOUBLE', nullable: true })) },
  EXP: { aggregate: false, type: numeric(() => ({ kind: 'DOUBLE', nullable: true })) },
  POWER: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 2),
      args.forEach((a, i) => wants(call, i, a, isNumeric, 'numeric')),
      { kind: 'DOUBLE', nullable: args.some((a) => a.nullable) }
    ),
  },
  ROUND: {
    aggregate: false,
    type: (args, call) => {
      arity(call, 1, 2);
      wants(call, 0, args[0]!, isNumeric, 'numeric');
      if (args[1]) wants(call, 1, args[1], (t) => t.kind === 'INT', 'INT');
      return nullableIf(args[0]!, ...args);
    },
  },
  TRIM: {
    aggregate: false,
    type: (args, call) => (arity(call, 1), wants(call, 0, args[0]!, isString, 'a string'), str(args[0]!.nullable)),
  },
  REPLACE: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 3),
      args.forEach((a, i) => wants(call, i, a, isString, 'a string')),
      str(args.some((a) => a.nullable))
    ),
  },
  SUBSTRING: { aggregate: false, type: substringType },
  SUBSTR: { aggregate: false, type: substringType },
  DATE_FORMAT: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 2),
      wants(call, 0, args[0]!, isTime, 'a timestamp'),
      wants(call, 1, args[1]!, isString, 'a string'),
      str(args.some((a) => a.nullable))
    ),
  },
  ...Object.fromEntries(
    ['YEAR', 'QUARTER', 'MONTH', 'DAYOFMONTH', 'DAYOFYEAR', 'DAYOFWEEK', 'HOUR', 'MINUTE', 'SECOND'].map((name) => [
      name,
      { aggregate: false, type: datePart },
    ]),
  ),
  LOG10: { aggregate: false, type: numeric(() => ({ kind: 'DOUBLE', nullable: true })) },
  LOG2: { aggregate: false, type: numeric(() => ({ kind: 'DOUBLE', nullable: true })) },
  SIGN: { aggregate: false, type: numeric((t) => t) },
  LOCATE: { aggregate: false, type: strings(2, 2, () => ({ kind: 'INT', nullable: true })) },
  INITCAP: { aggregate: false, type: strings(1, 1) },
  REVERSE: { aggregate: false, type: strings(1, 1) },
  REGEXP_REPLACE: { aggregate: false, type: strings(3, 3) },
  REGEXP_EXTRACT: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 2, 3),
      wants(call, 0, args[0]!, isString, 'a string'),
      wants(call, 1, args[1]!, isString, 'a string'),
      str(true)
    ),
  },
  SPLIT_INDEX: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 3),
      wants(call, 0, args[0]!, isString, 'a string'),
      wants(call, 1, args[1]!, isString, 'a string'),
      wants(call, 2, args[2]!, isInt, 'INT'),
      str(true)
    ),
  },
  LPAD: { aggregate: false, type: pad },
  RPAD: { aggregate: false, type: pad },
  REPEAT: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 2),
      wants(call, 0, args[0]!, isString, 'a string'),
      wants(call, 1, args[1]!, isInt, 'INT'),
      str(args.some((a) => a.nullable))
    ),
  },
  FROM_UNIXTIME: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 1),
      wants(call, 0, args[0]!, isInt, 'INT or BIGINT (seconds)'),
      str(args[0]!.nullable)
    ),
  },
  ITEM: {
    aggregate: false,
    type: (args, call) => {
      arity(call, 2);
      const [c, i] = [args[0]!, args[1]!];
      if (c.kind === 'ARRAY') return (wants(call, 1, i, isInt, 'INT'), withNullable(c.element, true));
      if (c.kind === 'MAP') return withNullable(c.value, true);
      const name = call.args[1]!;
      if (c.kind === 'ROW' && name.kind === 'string') {
        const f = c.fields.find((x) => x.name === name.value);
        if (!f)
          throw new SqlError(
            `the ROW has no field ${name.value}; its fields are ${c.fields.map((x) => x.name).join(', ')}`,
            name.at,
          );
        return withNullable(f.type, true);
      }
      throw new SqlError(
        `${printExpr(call.args[0]!)}[...]: an element is taken from an ARRAY (by position from 1) or a MAP (by key); this is ${typeName(c)}`,
        call.at,
      );
    },
  },
  CARDINALITY: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 1),
      wants(call, 0, args[0]!, (t) => t.kind === 'ARRAY' || t.kind === 'MAP', 'an ARRAY or MAP'),
      { kind: 'INT', nullable: args[0]!.nullable }
    ),
  },
  NOW: {
    aggregate: false,
    type: (_args, call) => (arity(call, 0), { kind: 'TIMESTAMP_LTZ', precision: 3, nullable: false }),
  },
  TO_TIMESTAMP: {
    aggregate: false,
    type: (args, call) => (
      arity(call, 1),
      wants(call, 0, args[0]!, isString, 'a string'),
      { kind: 'TIMESTAMP', precision: 3, nullable: true }
    ),
  },
  IF: {
    aggregate: false,
    type: (args, call) => {
      arity(call, 3);
      wants(call, 0, args[0]!, (t) => t.kind === 'BOOLEAN', 'a condition');
      const t = commonType([args[1]!, args[2]!]);
      if (!t)
        throw new SqlError(
          `IF: its results have no common type (${typeName(args[1]!)}, ${typeName(args[2]!)})`,
          call.at,
        );
      return t;
    },
  },
  PROCTIME: {
    aggregate: false,
    type: (_args, call) => (arity(call, 0), { kind: 'TIMESTAMP_LTZ', precision: 3, nullable: false }),
  },
  CURRENT_WATERMARK: {
    aggregate: false,
    type: (args, call) => {
      arity(call, 1);
      wants(
        call,
        0,
        args[0]!,
        (t) => (t.kind === 'TIMESTAMP' || t.kind === 'TIMESTAMP_LTZ') && t.rowtime === true,
        'an event-time attribute (a column with WATERMARK FOR)',
      );
      return withNullable(args[0]!, true);
    },
  },
};

/** The type of `e` in `scope`. */
export function typeOf(e: Expr, scope: Scope): SqlType {
  switch (e.kind) {
    case 'column':
      return resolveColumn(e, scope).type;
    case 'number':
      return /[.eE]/.test(e.text)
        ? { kind: 'DOUBLE', nullable: false }
        : Number(e.text) > 2_147_483_647
          ? { kind: 'BIGINT', nullable: false }
          : { kind: 'INT', nullable: false };
    case 'string':
      return { kind: 'STRING', nullable: false };
    case 'boolean':
      return BOOLEAN;
    case 'null':
      return { kind: 'NULL', nullable: true };
    case 'interval':
      return { kind: 'INTERVAL', nullable: false };
    case 'timestamp':
      return { kind: 'TIMESTAMP', precision: 3, nullable: false };
    case 'star':
      throw new SqlError('* stands only in a SELECT list or COUNT(*)', e.at);
    case 'unary': {
      const t = typeOf(e.operand, scope);
      if (e.op === 'NOT') return boolOperand(e.operand, t, 'NOT');
      if (!isNumeric(t) && t.kind !== 'INTERVAL' && t.kind !== 'NULL')
        throw new SqlError(
          `${e.op}${printExpr(e.operand)}: the operand is ${typeName(t)}; a sign needs a number`,
          e.at,
        );
      return t;
    }
    case 'binary':
      return binaryType(e, typeOf(e.left, scope), typeOf(e.right, scope));
    case 'isNull':
      typeOf(e.operand, scope); // its column references must resolve
      return BOOLEAN;
    case 'between': {
      const [t, lo, hi] = [typeOf(e.operand, scope), typeOf(e.low, scope), typeOf(e.high, scope)];
      if (!comparable(t, lo) || !comparable(t, hi))
        throw new SqlError(`BETWEEN compares ${typeName(t)} with ${typeName(lo)} and ${typeName(hi)}`, e.at);
      return nullableIf(BOOLEAN, t, lo, hi);
    }
    case 'in': {
      const t = typeOf(e.operand, scope);
      for (const item of e.list) {
        const it = typeOf(item, scope);
        if (!comparable(t, it))
          throw new SqlError(
            `IN: ${printExpr(item)} is ${typeName(it)}, which does not compare with ${typeName(t)}`,
            item.at,
          );
      }
      return nullableIf(BOOLEAN, t);
    }
    case 'like': {
      const [t, p] = [typeOf(e.operand, scope), typeOf(e.pattern, scope)];
      if ((t.kind !== 'STRING' && t.kind !== 'NULL') || (p.kind !== 'STRING' && p.kind !== 'NULL'))
        throw new SqlError(`LIKE needs strings; here ${typeName(t)} LIKE ${typeName(p)}`, e.at);
      return nullableIf(BOOLEAN, t, p);
    }
    case 'cast':
      return withNullable(fromDeclared(e.type), typeOf(e.operand, scope).nullable);
    case 'case': {
      for (const w of e.whens) {
        const cond = e.operand ? undefined : typeOf(w.when, scope);
        if (cond) boolOperand(w.when, cond, 'WHEN');
        else if (e.operand && !comparable(typeOf(e.operand, scope), typeOf(w.when, scope)))
          throw new SqlError(
            `CASE ${printExpr(e.operand)} WHEN ${printExpr(w.when)}: the two do not compare`,
            w.when.at,
          );
      }
      const branches = [
        ...e.whens.map((w) => typeOf(w.then, scope)),
        e.otherwise ? typeOf(e.otherwise, scope) : ({ kind: 'NULL', nullable: true } as SqlType),
      ];
      const t = commonType(branches);
      if (!t) throw new SqlError(`CASE: its results have no common type (${branches.map(typeName).join(', ')})`, e.at);
      return t;
    }
    case 'call': {
      const fn = FUNCTIONS[e.name];
      if (!fn)
        throw new SqlError(
          `no function ${e.name}; the functions are ${Object.keys(FUNCTIONS).sort().join(', ')}`,
          e.at,
        );
      const args = e.args.map((a) =>
        a.kind === 'star' && e.name === 'COUNT' ? ({ kind: 'BIGINT', nullable: false } as SqlType) : typeOf(a, scope),
      );
      return fn.type(args, e);
    }
  }
}

function boolOperand(e: Expr, t: SqlType, where: string): SqlType {
  if (t.kind !== 'BOOLEAN' && t.kind !== 'NULL')
    throw new SqlError(`${where} needs a condition; ${printExpr(e)} is ${typeName(t)}`, e.at);
  return withNullable(BOOLEAN, t.nullable);
}

function binaryType(e: Extract<Expr, { kind: 'binary' }>, l: SqlType, r: SqlType): SqlType {
  const refuse = (what: string): never => {
    throw new SqlError(`${printExpr(e)}: ${what} (${typeName(l)} ${e.op} ${typeName(r)})`, e.at);
  };
  switch (e.op) {
    case 'AND':
    case 'OR':
      boolOperand(e.left, l, e.op);
      boolOperand(e.right, r, e.op);
      return nullableIf(BOOLEAN, l, r);
    case '=':
    case '<>':
    case '<':
    case '<=':
    case '>':
    case '>=':
      if (!comparable(l, r)) refuse('the two sides do not compare');
      return nullableIf(BOOLEAN, l, r);
    case '||':
      if ((l.kind !== 'STRING' && l.kind !== 'NULL') || (r.kind !== 'STRING' && r.kind !== 'NULL'))
        refuse('|| joins strings');
      return str(l.nullable || r.nullable);
    case '+':
    case '-':
      if (isTime(l) && r.kind === 'INTERVAL') return nullableIf(l, r);
      if (e.op === '+' && l.kind === 'INTERVAL' && isTime(r)) return nullableIf(r, l);
      if (l.kind === 'INTERVAL' && r.kind === 'INTERVAL') return nullableIf(l, r);
      if (isNumeric(l) && isNumeric(r)) return widenNumeric(l, r);
      return refuse(
        e.op === '-'
          ? 'subtraction needs two numbers, or a time minus an interval'
          : 'addition needs two numbers, or a time and an interval',
      );
    default:
      if (!isNumeric(l) || !isNumeric(r)) refuse('arithmetic needs two numbers');
      // As in Flink: INT / INT is integer division, and types widen INT < BIGINT < DECIMAL < DOUBLE.
      return widenNumeric(l, r);
  }
}

/** The column a reference means: by name, or by qualifier and name; refused when missing or ambiguous. */
export function resolveColumn(e: Extract<Expr, { kind: 'column' }>, scope: Scope): ScopeColumn {
  const parts = e.name.parts;
  if (parts.length > 2) throw new SqlError(`${parts.join('.')}: a column is named as column or table.column`, e.at);
  const [qualifier, name] = parts.length === 2 ? [parts[0]!, parts[1]!] : [undefined, parts[0]!];
  const found = scope.filter((c) => c.name === name && (qualifier === undefined || c.qualifier === qualifier));
  if (found.length === 1) return found[0]!;
  const shown = parts.join('.');
  if (found.length > 1)
    throw new SqlError(
      `column ${shown} is ambiguous: ${found.map((c) => `${c.qualifier}.${c.name}`).join(' or ')}; qualify it`,
      e.at,
    );
  const near = scope.filter((c) => c.name.toLowerCase() === name.toLowerCase()).map((c) => `${c.qualifier}.${c.name}`);
  const hint =
    near.length > 0
      ? ` (names are case-sensitive: did you mean ${near.join(' or ')}?)`
      : scope.length > 0
        ? `; the columns are ${scope.map((c) => c.name).join(', ')}`
        : '';
  throw new SqlError(`no column ${shown}${hint}`, e.at);
}
