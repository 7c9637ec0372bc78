/**
 * Bound expressions to JavaScript: each projection, filter, key or aggregate argument becomes the source
 * of one function, compiled once when the job is planned (design record 015), so no tree is walked per
 * row. SQL's three-valued logic is kept: a nullable operand is tested once, through a temporary, and an
 * operand typed NOT NULL is not tested at all. Values: numbers (INT, BIGINT, DOUBLE, DECIMAL), strings,
 * booleans, timestamps as epoch milliseconds (UTC), intervals as milliseconds, NULL as null.
 */
import type { Expr } from './ast.js';
import { SqlError } from './errors.js';
import type { Field, NamedExpr } from './logical.js';
import { printExpr } from './printer.js';
import { likeRegExp, SQL_RUNTIME } from './sql-runtime.js';
import { INTERVAL_UNIT_MS, type SqlType } from './types.js';
import { typeOf, type Scope } from './typing.js';

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Source of a property name in an object literal. A computed name for `__proto__`, which as a plain
 * name would set the row's prototype instead of a column.
 */
export function propertyName(name: string): string {
  return name === '__proto__' ? '["__proto__"]' : JSON.stringify(name);
}

/** Source of a property access on `row`. */
export function access(row: string, field: string): string {
  return IDENT.test(field) ? `${row}.${field}` : `${row}[${JSON.stringify(field)}]`;
}

/** Generates the source of expressions over one input row, with the temporaries they need. */
export class ExprWriter {
  private temps = 0;
  /** Set when an expression reads the watermark: the function then takes the operator's context. */
  usesContext = false;
  private readonly scope: Scope;

  constructor(
    fields: readonly Field[],
    private readonly row = 'r',
  ) {
    this.scope = fields.map((f) => ({ qualifier: '', name: f.name, type: f.type }));
  }

  /** A function `(r, $ctx) => value` for each expression, as one source text. */
  fn(e: Expr): string {
    const body = this.gen(e);
    return `(${this.row}, $ctx) => { ${this.declarations()}return ${body}; }`;
  }

  /** A function `(r, $ctx) => boolean`: true only where the condition is TRUE (not FALSE or NULL). */
  predicate(e: Expr): string {
    const body = this.gen(e);
    return `(${this.row}, $ctx) => { ${this.declarations()}return ${this.type(e).nullable ? `(${body}) === true` : body}; }`;
  }

  /** A function `(r, $ctx) => ({ name: value, ... })`; over updates, the row's `$op` goes along. */
  object(exprs: readonly NamedExpr[], updating = false): string {
    const props = [
      ...exprs.map((x) => `${propertyName(x.name)}: ${this.gen(x.expr)}`),
      ...(updating ? [`$op: ${this.row}.$op`] : []),
    ].join(', ');
    return `(${this.row}, $ctx) => { ${this.declarations()}return { ${props} }; }`;
  }

  /** An expression's source (call fn/predicate/object for a whole function). */
  gen(e: Expr): string {
    switch (e.kind) {
      case 'column':
        return access(this.row, e.name.parts[0]!);
      case 'number':
        return String(Number(e.text));
      case 'string':
        return JSON.stringify(e.value);
      case 'boolean':
        return String(e.value);
      case 'null':
        return 'null';
      case 'interval':
        return String(intervalValue(e));
      case 'timestamp':
        return String(parseTimestampLiteral(e.value, e.at));
      case 'star':
        throw new SqlError('* stands only in a SELECT list or COUNT(*)', e.at);
      case 'unary':
        if (e.op === '+') return this.gen(e.operand);
        return this.nullSafe([e.operand], ([x]) => (e.op === 'NOT' ? `!${x}` : `-${x}`));
      case 'binary':
        return this.binary(e);
      case 'isNull':
        return `(${this.gen(e.operand)} ${e.negated ? '!=' : '=='} null)`;
      case 'between': {
        const ge: Expr = { kind: 'binary', op: '>=', left: e.operand, right: e.low, at: e.at };
        const le: Expr = { kind: 'binary', op: '<=', left: e.operand, right: e.high, at: e.at };
        const both = this.binary({ kind: 'binary', op: 'AND', left: ge, right: le, at: e.at });
        return e.negated ? this.nullSafeSource(both, (x) => `!${x}`) : both;
      }
      case 'in':
        return this.nullSafe([e.operand], ([x]) => {
          const tests = e.list.map((item) => `${x} === ${this.gen(item)}`).join(' || ');
          return e.negated ? `!(${tests})` : `(${tests})`;
        });
      case 'like': {
        const literal = e.pattern.kind === 'string' ? e.pattern.value : undefined;
        const re = literal === undefined ? undefined : likeRegExp(literal).toString();
        return this.nullSafe(literal === undefined ? [e.operand, e.pattern] : [e.operand], ([x, p]) => {
          const test = re ? `${re}.test(${x})` : `$rt.like(${x}, ${p})`;
          return e.negated ? `!${test}` : test;
        });
      }
      case 'cast':
        return this.nullSafe([e.operand], ([x]) => castSource(x!, this.type(e.operand), this.type(e), e));
      case 'case':
        return this.caseSource(e);
      case 'call':
        return this.call(e);
    }
  }

  type(e: Expr): SqlType {
    return typeOf(e, this.scope);
  }

  /** `let $t0, ...;` for the temporaries generated so far (empty when none). */
  declarations(): string {
    if (this.temps === 0) return '';
    return `let ${Array.from({ length: this.temps }, (_, i) => `$t${i}`).join(', ')}; `;
  }

  private temp(): string {
    return `$t${this.temps++}`;
  }

  /**
   * `op` applied to the operands' values, or null when one is null. Operands typed NOT NULL are used as
   * they are; nullable ones are held in a temporary and tested once.
   */
  private nullSafe(operands: readonly Expr[], op: (values: string[]) => string): string {
    const tests: string[] = [];
    const values = operands.map((o) => {
      const src = this.gen(o);
      if (!this.type(o).nullable || isSimple(o)) {
        if (this.type(o).nullable) tests.push(`${src} == null`);
        return src;
      }
      const t = this.temp();
      tests.push(`(${t} = ${src}) == null`);
      return t;
    });
    const body = op(values);
    return tests.length === 0 ? `(${body})` : `(${tests.join(' || ')} ? null : ${body})`;
  }

  private nullSafeSource(src: string, op: (x: string) => string): string {
    const t = this.temp();
    return `((${t} = ${src}) == null ? null : ${op(t)})`;
  }

  private binary(e: Extract<Expr, { kind: 'binary' }>): string {
    const [lt, rt] = [this.type(e.left), this.type(e.right)];
    if (e.op === 'AND' || e.op === 'OR') {
      const [l, r] = [this.gen(e.left), this.gen(e.right)];
      if (!lt.nullable && !rt.nullable) return `(${l} ${e.op === 'AND' ? '&&' : '||'} ${r})`;
      return `$rt.${e.op === 'AND' ? 'and' : 'or'}(${l}, ${r})`;
    }
    const ops: Record<string, string> = {
      '=': '===',
      '<>': '!==',
      '<': '<',
      '<=': '<=',
      '>': '>',
      '>=': '>=',
      '+': '+',
      '-': '-',
      '*': '*',
      '%': '%',
      '||': '+',
    };
    if (e.op === '/') {
      const integral = (t: SqlType): boolean => t.kind === 'INT' || t.kind === 'BIGINT';
      return this.nullSafe([e.left, e.right], ([l, r]) =>
        integral(lt) && integral(rt) ? `$rt.idiv(${l}, ${r})` : `${l} / ${r}`,
      );
    }
    return this.nullSafe([e.left, e.right], ([l, r]) => `${l} ${ops[e.op]} ${r}`);
  }

  private caseSource(e: Extract<Expr, { kind: 'case' }>): string {
    const otherwise = e.otherwise ? this.gen(e.otherwise) : 'null';
    if (e.operand) {
      const t = this.temp();
      const arms = e.whens.map((w) => `${t} === ${this.gen(w.when)} ? ${this.gen(w.then)} : `).join('');
      return `((${t} = ${this.gen(e.operand)}) == null ? ${otherwise} : ${arms}${otherwise})`;
    }
    return `(${e.whens.map((w) => `(${this.gen(w.when)}) === true ? ${this.gen(w.then)} : `).join('')}${otherwise})`;
  }

  private call(e: Extract<Expr, { kind: 'call' }>): string {
    const a = e.args;
    const unary = (f: (x: string) => string): string => this.nullSafe([a[0]!], ([x]) => f(x!));
    switch (e.name) {
      case 'ABS':
        return unary((x) => `Math.abs(${x})`);
      case 'FLOOR':
        return unary((x) => `Math.floor(${x})`);
      case 'CEIL':
        return unary((x) => `Math.ceil(${x})`);
      case 'SQRT':
        return unary((x) => `Math.sqrt(${x})`);
      case 'LN':
        return unary((x) => `Math.log(${x})`);
      case 'EXP':
        return unary((x) => `Math.exp(${x})`);
      case 'UPPER':
        return unary((x) => `${x}.toUpperCase()`);
      case 'LOWER':
        return unary((x) => `${x}.toLowerCase()`);
      case 'TRIM':
        return unary((x) => `${x}.trim()`);
      case 'CHAR_LENGTH':
        return unary((x) => `${x}.length`);
      case 'MOD':
        return this.nullSafe(a, ([x, y]) => `${x} % ${y}`);
      case 'POWER':
        return this.nullSafe(a, ([x, y]) => `Math.pow(${x}, ${y})`);
      case 'ROUND':
        return this.nullSafe(a, ([x, d]) => `$rt.round(${x}, ${d ?? 0})`);
      case 'CONCAT':
        return this.nullSafe(a, (xs) => `"" + ${xs.join(' + ')}`);
      case 'REPLACE':
        return this.nullSafe(a, ([s, f, t]) => `${s}.split(${f}).join(${t})`);
      case 'SUBSTRING':
      case 'SUBSTR':
        return this.nullSafe(a, ([s, start, len]) => `$rt.substring(${s}, ${start}, ${len ?? 'undefined'})`);
      case 'DATE_FORMAT':
        return this.nullSafe(a, ([t, f]) => `$rt.dateFormat(${t}, ${f})`);
      case 'YEAR':
      case 'QUARTER':
      case 'MONTH':
      case 'DAYOFMONTH':
      case 'DAYOFYEAR':
      case 'DAYOFWEEK':
      case 'HOUR':
      case 'MINUTE':
      case 'SECOND':
        return unary((x) => `$rt.datePart(${x}, ${JSON.stringify(e.name)})`);
      case 'LOG10':
        return unary((x) => `Math.log10(${x})`);
      case 'LOG2':
        return unary((x) => `Math.log2(${x})`);
      case 'SIGN':
        return unary((x) => `Math.sign(${x})`);
      case 'LOCATE':
        return this.nullSafe(a, ([n, s]) => `(${s}.indexOf(${n}) + 1)`);
      case 'INITCAP':
        return unary((x) => `$rt.initcap(${x})`);
      case 'REVERSE':
        return unary((x) => `[...${x}].reverse().join("")`);
      case 'REGEXP_REPLACE':
        return this.nullSafe(a, ([s, re, r]) => `${s}.replace($rt.regexp(${re}, "g"), ${r})`);
      case 'REGEXP_EXTRACT':
        return this.nullSafe(a, ([s, re, g]) => `$rt.regexpExtract(${s}, ${re}, ${g ?? 0})`);
      case 'SPLIT_INDEX':
        return this.nullSafe(a, ([s, d, i]) => `(${s}.split(${d})[${i}] ?? null)`);
      case 'LPAD':
      case 'RPAD':
        return this.nullSafe(a, ([s, n, p]) => `$rt.pad(${s}, ${n}, ${p}, ${e.name === 'LPAD'})`);
      case 'REPEAT':
        return this.nullSafe(a, ([s, n]) => `${s}.repeat(Math.max(0, ${n}))`);
      case 'FROM_UNIXTIME':
        return unary((x) => `$rt.dateFormat(${x} * 1000, "yyyy-MM-dd HH:mm:ss")`);
      case 'NOW':
        return 'Date.now()';
      case 'ITEM': {
        const base = this.type(a[0]!).kind;
        return this.nullSafe(a, ([c, i]) =>
          base === 'ARRAY' ? `(${c}[${i} - 1] ?? null)` : `(Object.hasOwn(${c}, ${i}) ? ${c}[${i}] : null)`,
        );
      }
      case 'CARDINALITY': {
        const base = this.type(a[0]!).kind;
        return unary((x) => (base === 'ARRAY' ? `${x}.length` : `Object.keys(${x}).length`));
      }
      case 'TO_TIMESTAMP':
        return unary((x) => `$rt.toTimestamp(${x})`);
      case 'IF':
        return `((${this.gen(a[0]!)}) === true ? ${this.gen(a[1]!)} : ${this.gen(a[2]!)})`;
      case 'COALESCE': {
        const t = this.temp();
        return `(${a
          .slice(0, -1)
          .map((x) => `(${t} = ${this.gen(x)}) != null ? ${t} : `)
          .join('')}${this.gen(a.at(-1)!)})`;
      }
      case 'PROCTIME':
        return 'Date.now()';
      case 'CURRENT_WATERMARK':
        this.usesContext = true;
        return '$rt.watermark($ctx)';
      default:
        throw new SqlError(`${e.name}(...) cannot be computed per row here${e.over ? ' (an OVER window)' : ''}`, e.at);
    }
  }
}

const isSimple = (e: Expr): boolean => e.kind === 'column';

export function intervalValue(e: Extract<Expr, { kind: 'interval' }>): number {
  const per = INTERVAL_UNIT_MS[e.unit];
  if (per === undefined)
    throw new SqlError(`INTERVAL '${e.value}' ${e.unit}: intervals of months and years are not supported`, e.at);
  return Number(e.value) * per;
}

export function parseTimestampLiteral(value: string, at: number): number {
  const ms = SQL_RUNTIME.toTimestamp(value);
  if (ms === null) throw new SqlError(`TIMESTAMP '${value}': expected 'yyyy-MM-dd HH:mm:ss[.SSS]'`, at);
  return ms;
}

function castSource(x: string, from: SqlType, to: SqlType, e: Expr): string {
  switch (to.kind) {
    case 'INT':
    case 'BIGINT':
      return from.kind === 'STRING'
        ? `$rt.toInt(${x})`
        : from.kind === 'BOOLEAN'
          ? `(${x} ? 1 : 0)`
          : `Math.trunc(${x})`;
    case 'DOUBLE':
    case 'DECIMAL':
      return from.kind === 'STRING' ? `$rt.toNumber(${x})` : from.kind === 'BOOLEAN' ? `(${x} ? 1 : 0)` : x;
    case 'STRING':
      return from.kind === 'TIMESTAMP' || from.kind === 'TIMESTAMP_LTZ'
        ? `$rt.formatTimestamp(${x})`
        : from.kind === 'BOOLEAN'
          ? `(${x} ? "TRUE" : "FALSE")`
          : `String(${x})`;
    case 'BOOLEAN':
      return from.kind === 'STRING' ? `$rt.toBoolean(${x})` : `(${x} !== 0)`;
    case 'TIMESTAMP':
    case 'TIMESTAMP_LTZ':
      return from.kind === 'STRING' ? `$rt.toTimestampOrFail(${x})` : x;
    default:
      throw new SqlError(`CAST(${printExpr(e)} AS ...): a cast to ${to.kind} is not supported`, e.at);
  }
}

/**
 * Compiles generated function sources once. The functions see `$rt`, the SQL runtime helpers, and
 * nothing else of the engine.
 */
export function compileFunction<F>(source: string): F {
  return new Function('$rt', `"use strict"; return ${source};`)(SQL_RUNTIME) as F;
}
