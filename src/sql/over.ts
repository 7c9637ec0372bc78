/**
 * OVER in a SELECT list, bound below the projection: `ROW_NUMBER() OVER (PARTITION BY ... ORDER BY
 * ...)` to a rank node (a Top-N with an outer WHERE rownum <= N), and aggregates `agg(x) OVER
 * (PARTITION BY ... ORDER BY time [ROWS|RANGE BETWEEN ... PRECEDING AND CURRENT ROW])` to an over
 * node. The calls' values become fields the projection reads.
 */
import type { Expr, FrameBound, Select, WindowSpec } from './ast.js';
import { SqlError } from './errors.js';
import { fieldRef, find, mapChildren } from './expressions.js';
import {
  AGGREGATE_FUNCTIONS,
  type AggregateCall,
  type AggregateFunctionName,
  type LogicalNode,
  type OverNode,
  type RankNode,
} from './logical.js';
import { printExpr } from './printer.js';
import { intervalValue } from './codegen.js';
import { typeOf, type Scope } from './typing.js';

type Call = Extract<Expr, { kind: 'call' }>;

export interface BoundOver {
  node: RankNode | OverNode;
  /** The SELECT item with each OVER call replaced by the field that holds its value. */
  replace(e: Expr): Expr;
}

/** The OVER calls of a SELECT bound over `input`; undefined when it has none. `bind` binds an expression to the input's fields. */
export function bindOver(
  s: Select,
  input: LogicalNode,
  scope: Scope,
  bind: (e: Expr) => Expr,
  unique: (name: string) => string,
): BoundOver | undefined {
  const calls: Call[] = [];
  for (const item of s.items) collect(item.expr, calls);
  if (calls.length === 0) return undefined;
  const fieldOf = new Map<Call, string>();
  const replace = (e: Expr): Expr =>
    e.kind === 'call' && fieldOf.has(e) ? fieldRef(fieldOf.get(e)!, e.at) : mapChildren(e, replace);
  const rowNumbers = calls.filter((c) => c.name === 'ROW_NUMBER');
  if (rowNumbers.length > 0) {
    const call = rowNumbers[0]!;
    if (calls.length > 1)
      throw new SqlError(
        'ROW_NUMBER() OVER (...) stands alone: one per SELECT, with no other OVER function',
        calls.find((c) => c !== call)!.at,
      );
    if (!s.items.some((i) => i.expr === call))
      throw new SqlError(
        'ROW_NUMBER() OVER (...) stands as a column of its own (ROW_NUMBER() OVER (...) AS rownum)',
        call.at,
      );
    if (call.args.length > 0) throw new SqlError('ROW_NUMBER() takes no arguments', call.at);
    const spec = call.over!;
    if (spec.orderBy.length === 0)
      throw new SqlError('ROW_NUMBER() OVER (...) needs an ORDER BY: which rows come first', call.at);
    if (spec.frame) throw new SqlError('ROW_NUMBER() OVER (...) takes no ROWS or RANGE frame', call.at);
    const rankField = unique('$rownum');
    fieldOf.set(call, rankField);
    const node: RankNode = {
      kind: 'rank',
      input,
      partitionBy: spec.partitionBy.map(bind),
      orderBy: spec.orderBy.map((o) => ({ expr: bind(o.expr), descending: o.descending })),
      rankField,
      fields: [...input.fields, { name: rankField, type: { kind: 'BIGINT', nullable: false } }],
      at: call.at,
    };
    return { node, replace };
  }
  const first = calls[0]!;
  const spec = first.over!;
  const shown = (w: WindowSpec): string =>
    JSON.stringify({
      p: w.partitionBy.map(printExpr),
      o: w.orderBy.map((o) => [printExpr(o.expr), o.descending]),
      f: w.frame && { u: w.frame.unit, s: bound(w.frame.start), e: w.frame.end && bound(w.frame.end) },
    });
  for (const c of calls.slice(1))
    if (shown(c.over!) !== shown(spec))
      throw new SqlError(
        'the OVER aggregations of one SELECT share one window: the same PARTITION BY, ORDER BY and frame',
        c.at,
      );
  if (spec.orderBy.length !== 1 || spec.orderBy[0]!.descending || spec.orderBy[0]!.expr.kind !== 'column') {
    throw new SqlError('an OVER aggregation is ordered by one event-time column, ascending (ORDER BY ts)', first.at);
  }
  const order = bind(spec.orderBy[0]!.expr);
  const frame = frameOf(spec, first);
  const aggs: AggregateCall[] = calls.map((c) => {
    const fn = c.name as AggregateFunctionName;
    if (!AGGREGATE_FUNCTIONS.includes(fn))
      throw new SqlError(
        `${c.name}(...) OVER (...) is not supported; the OVER aggregates are ${AGGREGATE_FUNCTIONS.join(', ')} and ROW_NUMBER`,
        c.at,
      );
    if (c.distinct) throw new SqlError(`${c.name}(DISTINCT ...) OVER (...) is not supported yet`, c.at);
    const star = c.args.length === 1 && c.args[0]!.kind === 'star';
    const type = typeOf({ ...c, over: undefined } as Call, scope);
    const name = unique(`$o${fieldOf.size}`);
    fieldOf.set(c, name);
    return { name, fn, ...(star ? {} : { arg: bind(c.args[0]!) }), distinct: false, type };
  });
  const node: OverNode = {
    kind: 'over',
    input,
    partitionBy: spec.partitionBy.map(bind),
    orderField: (order as { name: { parts: string[] } }).name.parts[0]!,
    frame,
    aggs,
    fields: [...input.fields, ...aggs.map((a) => ({ name: a.name, type: a.type }))],
    at: first.at,
  };
  return { node, replace };
}

function collect(e: Expr, into: Call[]): void {
  const c = find(e, (x) => x.kind === 'call' && x.over !== undefined && !into.includes(x as Call)) as Call | undefined;
  if (!c) return;
  into.push(c);
  collect(e, into);
}

const bound = (b: FrameBound): string =>
  b.kind === 'preceding' || b.kind === 'following' ? `${b.kind} ${printExpr(b.offset)}` : b.kind;

/** The frame: how far back from the current row, in rows or in time (null: from the first row). */
function frameOf(spec: WindowSpec, at: Call): OverNode['frame'] {
  const f = spec.frame;
  if (!f) return { unit: 'RANGE', preceding: null };
  if (f.end && f.end.kind !== 'currentRow') throw new SqlError('an OVER frame ends at CURRENT ROW', at.at);
  if (f.start.kind === 'unboundedPreceding') return { unit: f.unit, preceding: null };
  if (f.start.kind !== 'preceding')
    throw new SqlError('an OVER frame starts at UNBOUNDED PRECEDING or n PRECEDING', at.at);
  const o = f.start.offset;
  if (f.unit === 'ROWS') {
    if (o.kind !== 'number' || !/^\d+$/.test(o.text))
      throw new SqlError(`ROWS ${printExpr(o)} PRECEDING: a whole number of rows`, o.at);
    return { unit: 'ROWS', preceding: Number(o.text) };
  }
  if (o.kind !== 'interval')
    throw new SqlError(
      `RANGE ${printExpr(o)} PRECEDING: an interval, as RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW`,
      o.at,
    );
  return { unit: 'RANGE', preceding: intervalValue(o) };
}
