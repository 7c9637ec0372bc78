/**
 * The binder: a parsed query, read against the catalog, to a logical plan. Names are resolved (FROM
 * scopes, aliases, views, windowing table functions), types checked (typing.ts), GROUP BY rules applied
 * (every selected column grouped or aggregated), and every refusal is an SqlError at its node.
 */
import type { Expr, Query, Select, TableRef } from './ast.js';
import type { CatalogObject } from './catalog.js';
import { SqlError } from './errors.js';
import { columnsOf, fieldRef, find, mapChildren, NONDETERMINISTIC, some } from './expressions.js';
import {
  AGGREGATE_FUNCTIONS,
  windowBounds,
  type AggregateCall,
  type AggregateFunctionName,
  type Field,
  type JoinNode,
  type LogicalNode,
  type NamedExpr,
  type ScanNode,
  type WindowDef,
} from './logical.js';
import { bindOver } from './over.js';
import { printExpr } from './printer.js';
import { bindTable } from './scan.js';
import { commonType, INTERVAL_UNIT_MS, typeName, type SqlType } from './types.js';
import { FUNCTIONS, resolveColumn, typeOf, type ScopeColumn } from './typing.js';

/** A column as a query sees it: by qualifier and name, and the field of the row that holds it. */
export interface BoundColumn extends ScopeColumn {
  field: string;
}

export interface Bound {
  node: LogicalNode;
  scope: BoundColumn[];
}

export type Lookup = (name: string) => CatalogObject | undefined;

const TIMESTAMP3: SqlType = { kind: 'TIMESTAMP', precision: 3, nullable: false };
const WINDOW_FIELDS = ['window_start', 'window_end', 'window_time'] as const;

/** The scope a node's own fields make, under one qualifier. */
export function scopeOf(fields: readonly Field[], qualifier = ''): BoundColumn[] {
  return fields.map((f) => ({ qualifier, name: f.name, type: f.type, field: f.name }));
}

/** A name unique among `taken` (which it joins): `name`, else `name0`, `name1`, ... as Flink names them. */
export function uniqueName(name: string, taken: Set<string>): string {
  let n = name;
  for (let i = 0; taken.has(n); i++) n = `${name}${i}`;
  taken.add(n);
  return n;
}

export class Binder {
  private readonly viewsBeingBound: string[] = [];

  constructor(private readonly lookup: Lookup) {}

  /** A query to a plan whose fields are the query's columns, in order. */
  query(q: Query): LogicalNode {
    if (q.orderBy.length > 0)
      throw new SqlError(
        'ORDER BY on a streaming query is not supported (results arrive as windows fire); order the results where you read them',
        q.orderBy[0]!.expr.at,
      );
    if (q.limit !== undefined)
      throw new SqlError(
        'LIMIT on a streaming query is not supported; for the top rows per window use ROW_NUMBER() OVER (PARTITION BY window_start ...)',
        q.at,
      );
    const body = q.body;
    if (body.kind === 'select') return this.select(body);
    const left = this.query(body.left);
    const right = this.query(body.right);
    if (left.fields.length !== right.fields.length)
      throw new SqlError(
        `UNION ALL: the left side has ${left.fields.length} columns, the right ${right.fields.length}`,
        body.at,
      );
    const fields = left.fields.map((f, i) => {
      const t = commonType([f.type, right.fields[i]!.type]);
      if (!t)
        throw new SqlError(
          `UNION ALL: column ${i + 1} is ${typeName(f.type)} on the left and ${typeName(right.fields[i]!.type)} on the right`,
          body.at,
        );
      return { name: f.name, type: t };
    });
    // The right side's rows take the left side's column names.
    const renamed: LogicalNode = right.fields.every((f, i) => f.name === fields[i]!.name)
      ? right
      : {
          kind: 'project',
          input: right,
          exprs: right.fields.map((f, i) => ({ name: fields[i]!.name, expr: fieldRef(f.name) })),
          fields: right.fields.map((f, i) => ({ name: fields[i]!.name, type: f.type })),
        };
    const union: LogicalNode = { kind: 'union', inputs: [left, renamed], fields };
    return body.all ? union : distinct(union, body.at);
  }

  private select(s: Select): LogicalNode {
    if (!s.from) throw new SqlError('a query needs a FROM clause', s.at);
    let { node, scope } = this.from(s.from);
    if (s.where) {
      const aggregate = find(s.where, isAggregateCall);
      if (aggregate) throw new SqlError('an aggregate cannot stand in WHERE; use HAVING', aggregate.at);
      const condition = this.expr(s.where, scope);
      condition_(condition, node, 'WHERE');
      node = { kind: 'filter', input: node, condition, fields: node.fields };
    }
    const grouped =
      s.groupBy.length > 0 ||
      s.items.some((i) => some(i.expr, isAggregateCall)) ||
      (s.having !== undefined && some(s.having, isAggregateCall));
    if (s.distinct) return distinct(this.selectList(s, node, scope, grouped), s.at);
    return this.selectList(s, node, scope, grouped);
  }

  /** The SELECT list (and its GROUP BY, HAVING, OVER) over the FROM and WHERE. */
  private selectList(s: Select, node: LogicalNode, scope: BoundColumn[], grouped: boolean): LogicalNode {
    if (!grouped) {
      if (s.having) throw new SqlError('HAVING needs GROUP BY or an aggregate', s.having.at);
      const taken = new Set(node.fields.map((f) => f.name));
      const over = bindOver(
        s,
        node,
        scope,
        (e) => this.expr(e, scope),
        (name) => uniqueName(name, taken),
      );
      if (over) return this.project(s, over.node, scope, (e) => over.replace(this.expr(e, scope)));
      return this.project(s, node, scope, (e) => this.expr(e, scope));
    }
    return this.aggregate(s, node, scope);
  }

  /** The SELECT list over `input`: `*` expanded, each item bound by `bind`, names made unique. */
  private project(s: Select, input: LogicalNode, scope: BoundColumn[], bind: (e: Expr) => Expr): LogicalNode {
    const taken = new Set<string>();
    const exprs: NamedExpr[] = [];
    s.items.forEach((item, i) => {
      if (item.expr.kind === 'star') {
        const table = item.expr.table;
        const cols = scope.filter((c) => table === undefined || c.qualifier === table);
        if (cols.length === 0) throw new SqlError(`${table}.*: no table or alias ${table} in FROM`, item.expr.at);
        for (const c of cols) exprs.push({ name: uniqueName(c.name, taken), expr: fieldRef(c.field, item.expr.at) });
        return;
      }
      const expr = bind(item.expr);
      const name = item.alias ?? (item.expr.kind === 'column' ? item.expr.name.parts.at(-1)! : `EXPR$${i}`);
      if (name === '__proto__')
        throw new SqlError(
          'the column name __proto__ is reserved (rows are JavaScript objects); choose another',
          item.expr.at,
        );
      exprs.push({ name: uniqueName(name, taken), expr });
    });
    const inScope = scopeOf(input.fields);
    const fields = exprs.map((e) => ({ name: e.name, type: typeOf(e.expr, inScope) }));
    // A projection that passes every field through unchanged is no node at all.
    const identity =
      exprs.length === input.fields.length &&
      exprs.every(
        (e, i) =>
          e.expr.kind === 'column' &&
          e.expr.name.parts[0] === input.fields[i]!.name &&
          e.name === input.fields[i]!.name,
      );
    return identity ? input : { kind: 'project', input, exprs, fields };
  }

  private aggregate(s: Select, input: LogicalNode, scope: BoundColumn[]): LogicalNode {
    const inScope = scopeOf(input.fields);
    const taken = new Set<string>();
    const keys: NamedExpr[] = s.groupBy.map((g, i) => {
      if (some(g, isAggregateCall)) throw new SqlError('an aggregate cannot stand in GROUP BY', g.at);
      const expr = this.expr(g, scope);
      const name = expr.kind === 'column' ? expr.name.parts[0]! : `$g${i}`;
      return { name: uniqueName(name, taken), expr };
    });
    const window = windowOf(input, keys, s);
    const aggs: AggregateCall[] = [];
    const byKey = new Map(keys.map((k) => [printExpr(k.expr), k.name]));
    // An item over the aggregate's output: group expressions become their key, aggregates their result.
    const lift = (e: Expr): Expr => {
      const key = byKey.get(printExpr(e));
      if (key !== undefined) return fieldRef(key, e.at);
      if (isAggregateCall(e)) return fieldRef(this.aggregateCall(e, inScope, aggs, taken), e.at);
      if (e.kind === 'column')
        throw new SqlError(
          `column ${printExpr(e)} must be in GROUP BY or inside an aggregate such as MAX(${printExpr(e)})`,
          e.at,
        );
      return mapChildren(e, lift);
    };
    const liftBound = (e: Expr): Expr => {
      if (e.kind === 'call' && isAggregateCall(e) && some({ ...e, name: 'X' }, isAggregateCall))
        throw new SqlError(`${e.name}: an aggregate cannot stand inside another`, e.at);
      return lift(this.expr(e, scope));
    };
    // Bind items first so the aggregate node knows every call; HAVING may add more.
    const items = s.items.map((i) => (i.expr.kind === 'star' ? i.expr : liftBound(i.expr)));
    const having = s.having ? liftBound(s.having) : undefined;
    const fields: Field[] = [
      ...keys.map((k) => ({ name: k.name, type: typeOf(k.expr, inScope) })),
      ...aggs.map((a) => ({ name: a.name, type: a.type })),
    ];
    let node: LogicalNode = { kind: 'aggregate', input, keys, aggs, ...(window ? { window } : {}), fields, at: s.at };
    const outScope = scopeOf(fields);
    if (having) {
      condition_(having, node, 'HAVING');
      node = { kind: 'filter', input: node, condition: having, fields };
    }
    let n = 0;
    return this.project(s, node, outScope, () => {
      const e = items[n++]!;
      if (e.kind === 'star')
        throw new SqlError('SELECT * with GROUP BY: name the grouped columns and aggregates', e.at);
      return e;
    });
  }

  /** Registers an aggregate call (once per distinct call) and returns the field that holds its result. */
  private aggregateCall(
    e: Extract<Expr, { kind: 'call' }>,
    scope: BoundColumn[],
    aggs: AggregateCall[],
    taken: Set<string>,
  ): string {
    const fn = e.name as AggregateFunctionName;
    if (!AGGREGATE_FUNCTIONS.includes(fn))
      throw new SqlError(
        `${e.name} is not supported as a grouped aggregate; the aggregates are ${AGGREGATE_FUNCTIONS.join(', ')}`,
        e.at,
      );
    if (e.args.some((a) => some(a, isAggregateCall)))
      throw new SqlError(`${e.name}: an aggregate cannot stand inside another`, e.at);
    const star = e.args.length === 1 && e.args[0]!.kind === 'star';
    const arg = star ? undefined : e.args[0];
    const type = typeOf(e, scope);
    const shown = printExpr(e);
    const same = aggs.find(
      (a) => printExpr({ ...e, name: a.fn, args: a.arg ? [a.arg] : e.args, distinct: a.distinct }) === shown,
    );
    if (same) return same.name;
    const name = uniqueName(`$a${aggs.length}`, taken);
    aggs.push({ name, fn, ...(arg ? { arg } : {}), distinct: e.distinct, type });
    return name;
  }

  private from(ref: TableRef): Bound {
    switch (ref.kind) {
      case 'table': {
        const name = ref.name.parts.join('.');
        const node = this.named(name, ref.name.at);
        return { node, scope: scopeOf(node.fields, ref.alias ?? ref.name.parts.at(-1)!) };
      }
      case 'subquery': {
        const node = this.query(ref.query);
        return { node, scope: scopeOf(node.fields, ref.alias ?? '') };
      }
      case 'tvf':
        return this.tvf(ref);
      case 'join':
        return this.join(ref);
    }
  }

  /**
   * An inner join (or `FROM a, b`, whose WHERE the optimizer makes its condition): the two scopes side
   * by side, field names made unique, the ON condition bound over both.
   */
  private join(ref: Extract<TableRef, { kind: 'join' }>): Bound {
    if (ref.type !== 'INNER' && ref.type !== 'CROSS')
      throw new SqlError(
        `${ref.type} OUTER JOIN is not supported yet (its results would be updates); use an inner JOIN`,
        ref.at,
      );
    const left = this.from(ref.left);
    const right = this.from(ref.right);
    const taken = new Set<string>();
    const fieldMap: JoinNode['fieldMap'] = [];
    const rename = (b: Bound, side: 'left' | 'right'): BoundColumn[] =>
      b.scope.map((c) => {
        const name = uniqueName(c.field, taken);
        fieldMap.push({ name, side, from: c.field });
        return { ...c, field: name };
      });
    const scope = [...rename(left, 'left'), ...rename(right, 'right')];
    const type = (side: 'left' | 'right', from: string): SqlType =>
      (side === 'left' ? left : right).node.fields.find((f) => f.name === from)!.type;
    const fields = fieldMap.map((m) => ({ name: m.name, type: type(m.side, m.from) }));
    // A field of a side that no scope column names (a view's own) still travels in the joined row.
    for (const [side, b] of [
      ['left', left],
      ['right', right],
    ] as const) {
      for (const f of b.node.fields) {
        if (!fieldMap.some((m) => m.side === side && m.from === f.name)) {
          const name = uniqueName(f.name, taken);
          fieldMap.push({ name, side, from: f.name });
          fields.push({ name, type: f.type });
        }
      }
    }
    let condition: Expr | undefined;
    if (ref.on) {
      if (some(ref.on, isAggregateCall)) throw new SqlError('an aggregate cannot stand in a join condition', ref.on.at);
      condition = this.expr(ref.on, scope);
      condition_(condition, { kind: 'union', inputs: [], fields }, 'ON');
    }
    const node: LogicalNode = {
      kind: 'join',
      left: left.node,
      right: right.node,
      leftKeys: [],
      rightKeys: [],
      ...(condition ? { condition } : {}),
      fieldMap,
      fields,
      at: ref.at,
    };
    return { node, scope };
  }

  /** A table or view by name. */
  private named(name: string, at: number): LogicalNode {
    const o = this.lookup(name);
    if (!o) throw new SqlError(`no table or view named ${name} (SHOW TABLES lists them)`, at);
    if (o.statement.kind === 'createTable') return bindTable(o.statement);
    if (this.viewsBeingBound.includes(name))
      throw new SqlError(`view ${name} refers to itself (${[...this.viewsBeingBound, name].join(' -> ')})`, at);
    this.viewsBeingBound.push(name);
    try {
      return this.query(o.statement.query);
    } catch (err) {
      if (err instanceof SqlError && err.text === undefined) throw new SqlError(`in view ${name}: ${err.detail}`, at);
      throw err;
    } finally {
      this.viewsBeingBound.pop();
    }
  }

  private tvf(ref: Extract<TableRef, { kind: 'tvf' }>): Bound {
    const kind = ref.name as WindowDef['kind'];
    const shapes: Record<string, string> = {
      TUMBLE: 'TUMBLE(TABLE t, DESCRIPTOR(time), size)',
      HOP: 'HOP(TABLE t, DESCRIPTOR(time), slide, size)',
      CUMULATE: 'CUMULATE(TABLE t, DESCRIPTOR(time), step, size)',
      SESSION: 'SESSION(TABLE t, DESCRIPTOR(time), gap)',
    };
    const shape = shapes[kind];
    if (!shape)
      throw new SqlError(
        `no table function ${ref.name}; the windowing functions are ${Object.keys(shapes).join(', ')}`,
        ref.at,
      );
    const [table, descriptor, ...rest] = ref.args;
    const wantIntervals = kind === 'TUMBLE' || kind === 'SESSION' ? 1 : 2;
    if (
      table?.kind !== 'tableArg' ||
      descriptor?.kind !== 'descriptor' ||
      rest.length !== wantIntervals ||
      rest.some((a) => a.kind !== 'exprArg')
    ) {
      throw new SqlError(`${kind} takes ${shape}`, ref.at);
    }
    const input = this.named(table.name.parts.join('.'), table.name.at);
    if (descriptor.columns.length !== 1)
      throw new SqlError(`DESCRIPTOR names the one time column of ${kind}`, descriptor.at);
    const timeField = input.fields.find((f) => f.name === descriptor.columns[0]);
    if (!timeField)
      throw new SqlError(
        `DESCRIPTOR(${descriptor.columns[0]}): ${table.name.parts.join('.')} has no such column; its columns are ${input.fields.map((f) => f.name).join(', ')}`,
        descriptor.at,
      );
    const t = timeField.type;
    const time =
      (t.kind === 'TIMESTAMP' || t.kind === 'TIMESTAMP_LTZ') && t.rowtime
        ? 'event'
        : t.kind === 'TIMESTAMP_LTZ' && isProctime(input, timeField.name)
          ? 'processing'
          : undefined;
    if (!time)
      throw new SqlError(
        `DESCRIPTOR(${timeField.name}): the column is ${typeName(t)}, not a time attribute; declare WATERMARK FOR ${timeField.name} in the table, or window on a PROCTIME() column`,
        descriptor.at,
      );
    const ms = rest.map((a) => intervalMs((a as { expr: Expr }).expr));
    const window: WindowDef =
      kind === 'TUMBLE'
        ? { kind, timeField: timeField.name, time, sizeMs: ms[0]! }
        : kind === 'SESSION'
          ? { kind, timeField: timeField.name, time, gapMs: ms[0]! }
          : { kind, timeField: timeField.name, time, slideMs: ms[0]!, sizeMs: ms[1]! };
    if (window.slideMs !== undefined && window.slideMs > window.sizeMs!)
      throw new SqlError(
        `${kind}: the ${kind === 'HOP' ? 'slide' : 'step'} (${window.slideMs} ms) must not exceed the size (${window.sizeMs} ms)`,
        ref.at,
      );
    if (kind === 'CUMULATE' && window.sizeMs! % window.slideMs! !== 0)
      throw new SqlError(
        `CUMULATE: the size (${window.sizeMs} ms) must be a whole number of steps (${window.slideMs} ms)`,
        ref.at,
      );
    for (const w of WINDOW_FIELDS)
      if (input.fields.some((f) => f.name === w))
        throw new SqlError(`${kind}: ${table.name.parts.join('.')} already has a column ${w}`, ref.at);
    const fields: Field[] = [
      ...input.fields,
      { name: 'window_start', type: TIMESTAMP3 },
      { name: 'window_end', type: TIMESTAMP3 },
      { name: 'window_time', type: { kind: 'TIMESTAMP', precision: 3, nullable: false, rowtime: time === 'event' } },
    ];
    const node: LogicalNode = { kind: 'windowTvf', input, window, fields, at: ref.at };
    return { node, scope: scopeOf(fields, ref.alias ?? table.name.parts.at(-1)!) };
  }

  /** `e` bound to the fields of the scope's rows, and type-checked. */
  expr(e: Expr, scope: BoundColumn[]): Expr {
    const withFields = rowFields(e, scope);
    typeOf(withFields, scope);
    return rebind(withFields, scope);
  }
}

/**
 * `r.f` (or `t.r.f`) where r is a ROW column, not a table: the field f of r, as ITEM(r, 'f'). A name
 * that a table or alias qualifies stays a column.
 */
function rowFields(e: Expr, scope: BoundColumn[]): Expr {
  // An OVER call is replaced by its field by identity (over.ts binds its arguments on their own).
  if (e.kind === 'call' && e.over) return e;
  if (e.kind !== 'column') {
    let changed = false;
    const out = mapChildren(e, (c) => {
      const r = rowFields(c, scope);
      changed ||= r !== c;
      return r;
    });
    return changed ? out : e;
  }
  const parts = e.name.parts;
  if (parts.length < 2) return e;
  const qualified = scope.some((c) => c.qualifier === parts[0] && c.name === parts[1]);
  const [columnParts, fields] = qualified ? [parts.slice(0, 2), parts.slice(2)] : [parts.slice(0, 1), parts.slice(1)];
  if (fields.length === 0) return e;
  const base: Expr = { kind: 'column', name: { ...e.name, parts: columnParts }, at: e.at };
  return fields.reduce<Expr>(
    (acc, f) => ({
      kind: 'call',
      name: 'ITEM',
      args: [acc, { kind: 'string', value: f, at: e.at }],
      distinct: false,
      at: e.at,
    }),
    base,
  );
}

function rebind(e: Expr, scope: BoundColumn[]): Expr {
  if (e.kind === 'column') return fieldRef((resolveColumn(e, scope) as BoundColumn).field, e.at);
  if (e.kind === 'call' && e.over) return e;
  return mapChildren(e, (c) => rebind(c, scope));
}

/**
 * Each distinct row once: a GROUP BY of every column with no aggregate. Its results are updates in
 * form, but a row, once there, never changes: only its first appearance goes out.
 */
function distinct(input: LogicalNode, at: number): LogicalNode {
  const keys = input.fields.map((f) => ({ name: f.name, expr: fieldRef(f.name, at) }));
  return { kind: 'aggregate', input, keys, aggs: [], fields: input.fields, at };
}

export function isAggregateCall(e: Expr): e is Extract<Expr, { kind: 'call' }> {
  return e.kind === 'call' && e.over === undefined && FUNCTIONS[e.name]?.aggregate === true;
}

/** Checks that a WHERE or HAVING condition is a condition. */
function condition_(e: Expr, node: LogicalNode, where: string): void {
  const t = typeOf(e, scopeOf(node.fields));
  if (t.kind !== 'BOOLEAN' && t.kind !== 'NULL')
    throw new SqlError(`${where} needs a condition; ${printExpr(e)} is ${typeName(t)}`, e.at);
}

/** The window of a GROUP BY over a windowing TVF (through filters), checked; undefined for a plain GROUP BY. */
function windowOf(input: LogicalNode, keys: NamedExpr[], s: Select): WindowDef | undefined {
  let n = input;
  while (n.kind === 'filter') {
    if ([...columnsOf(n.condition)].some((c) => (WINDOW_FIELDS as readonly string[]).includes(c)))
      throw new SqlError(
        'WHERE on window_start, window_end or window_time before the window aggregation is not supported; filter in HAVING or an outer query',
        n.condition.at,
      );
    n = n.input;
  }
  const refs = new Set(
    keys.filter((k) => k.expr.kind === 'column').map((k) => (k.expr as { name: { parts: string[] } }).name.parts[0]!),
  );
  if (n.kind !== 'windowTvf') {
    const below = windowBounds(n);
    if (below && refs.has(below.start) && refs.has(below.end)) {
      if (below.window.kind === 'SESSION' || below.window.kind === 'CUMULATE' || below.window.time !== 'event')
        throw new SqlError(
          `GROUP BY ${below.start}, ${below.end} again: only event-time TUMBLE and HOP windows can be aggregated again`,
          s.at,
        );
      return { ...below.window, cascade: { start: below.start, end: below.end } };
    }
    return undefined; // a GROUP BY without a window: its results are updates
  }
  if (!refs.has('window_start') || !refs.has('window_end'))
    throw new SqlError(
      `GROUP BY over ${n.window.kind}(...) must include window_start and window_end`,
      s.groupBy[0]?.at ?? s.at,
    );
  for (const k of keys) {
    if ([...columnsOf(k.expr)].some((c) => c === n.window.timeField) && k.expr.kind !== 'column')
      throw new SqlError(`GROUP BY ${printExpr(k.expr)}: the window's time column may not be grouped on`, k.expr.at);
  }
  return n.window;
}

/** A whole number of milliseconds from an INTERVAL literal. */
export function intervalMs(e: Expr): number {
  if (e.kind !== 'interval')
    throw new SqlError(`${printExpr(e)}: expected an interval such as INTERVAL '10' SECOND`, e.at);
  const per = INTERVAL_UNIT_MS[e.unit];
  if (per === undefined)
    throw new SqlError(
      `INTERVAL ... ${e.unit}: a window or watermark interval is in SECOND, MINUTE, HOUR or DAY`,
      e.at,
    );
  const ms = Number(e.value) * per;
  if (!Number.isInteger(ms) || ms <= 0)
    throw new SqlError(`INTERVAL '${e.value}' ${e.unit}: must be a positive whole number of milliseconds`, e.at);
  return ms;
}

/** Whether field `name` of `node` is a processing-time attribute (a PROCTIME() computed column, passed through). */
function isProctime(node: LogicalNode, name: string): boolean {
  switch (node.kind) {
    case 'scan': {
      const c = (node as ScanNode).computed[name];
      return c !== undefined && c.kind === 'call' && c.name === 'PROCTIME';
    }
    case 'filter':
      return isProctime(node.input, name);
    case 'project': {
      const e = node.exprs.find((x) => x.name === name)?.expr;
      return (
        e !== undefined &&
        ((e.kind === 'call' && e.name === 'PROCTIME') ||
          (e.kind === 'column' && isProctime(node.input, e.name.parts[0]!)))
      );
    }
    default:
      return false;
  }
}

export const isDeterministic = (e: Expr): boolean => !some(e, (x) => x.kind === 'call' && NONDETERMINISTIC.has(x.name));
