/**
 * The rules-based optimizer: rewrites a logical plan into one that computes the same rows with less
 * work. Each rule matches one node shape and returns a replacement or undefined; they run bottom-up
 * until none applies (bounded). Two-phase aggregation is not a rule here: every SQL aggregate merges, so
 * the runtime's window pre-aggregation (design record 010) always applies to a window aggregation.
 */
import type { Expr } from './ast.js';
import { isDeterministic, scopeOf } from './binder.js';
import { compileFunction, ExprWriter } from './codegen.js';
import { and, columnsOf, conjuncts, fieldRef, mapChildren, some, substitute } from './expressions.js';
import {
  filterIntoJoin,
  joinInInterval,
  joinInWindows,
  pruneBelowJoin,
  referencesIntoJoin,
  renameIntoJoin,
  splitJoinCondition,
} from './optimizer-joins.js';
import { inputsOf, type Field, type LogicalNode, type NamedExpr, type ScanNode } from './logical.js';
import { scanProjection } from './scan.js';
import { typeOf } from './typing.js';

type Rule = (n: LogicalNode) => LogicalNode | undefined;

const MAX_PASSES = 50;

export function optimize(plan: LogicalNode): LogicalNode {
  let current = foldConstants(plan);
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const next = rewrite(current);
    if (next === current) break;
    current = next;
  }
  current = reorderedAtRoot(current);
  return readsEventTime(current) ? current : withoutWatermarks(current);
}

/**
 * The query's last projection, when it only picks and orders an aggregation's columns, is the order
 * the aggregation builds its rows in. Only at the root: below, an aggregation keeps its own order so
 * that two uses of one aggregation keep one shape (and are planned once).
 */
function reorderedAtRoot(n: LogicalNode): LogicalNode {
  if (n.kind !== 'project' || n.input.kind !== 'aggregate') return n;
  const agg = n.input;
  const byName = new Map(agg.fields.map((f) => [f.name, f]));
  const picked = n.exprs.map((e) =>
    e.expr.kind === 'column' && e.expr.name.parts[0] === e.name ? byName.get(e.name) : undefined,
  );
  return picked.every((f) => f !== undefined) ? { ...agg, fields: picked as Field[] } : n;
}

/** Whether anything in the plan needs records' event times: an event-time window, or CURRENT_WATERMARK. */
function readsEventTime(n: LogicalNode): boolean {
  const watermarkCall = (e: Expr): boolean => some(e, (x) => x.kind === 'call' && x.name === 'CURRENT_WATERMARK');
  const own = ((): boolean => {
    switch (n.kind) {
      case 'scan':
        return [n.filter, ...(n.project ?? []).map((p) => p.expr)].some((e) => e !== undefined && watermarkCall(e));
      case 'filter':
        return watermarkCall(n.condition);
      case 'project':
        return n.exprs.some((e) => watermarkCall(e.expr));
      case 'windowTvf':
        return n.window.time === 'event';
      case 'aggregate':
        return n.window?.time === 'event';
      case 'union':
      case 'rank':
        return false;
      case 'over':
        return true;
      case 'join':
        return (
          n.interval !== undefined ||
          n.window !== undefined ||
          (n.condition !== undefined && watermarkCall(n.condition))
        );
    }
  })();
  return own || inputsOf(n).some(readsEventTime);
}

/** The plan with no watermark assigned: no operator reads event time, and no sink writes it. */
function withoutWatermarks(n: LogicalNode): LogicalNode {
  if (n.kind === 'scan') {
    if (!n.watermark) return n;
    const { watermark: _, ...rest } = n;
    return rest;
  }
  return withInputs(n, withoutWatermarks);
}

const RULES: Rule[] = [
  mergeFilters,
  mergeProjects,
  filterThroughProject,
  filterThroughWindow,
  filterIntoScan,
  projectIntoScan,
  renameIntoAggregate,
  pruneBelowWindowAggregate,
  filterIntoJoin,
  splitJoinCondition,
  pruneBelowJoin,
  renameIntoJoin,
  referencesIntoJoin,
  dropIdentityProject,
  joinInWindows,
  joinInInterval,
  limitRank,
];

function rewrite(n: LogicalNode): LogicalNode {
  const inputs = withInputs(n, (i) => rewrite(i));
  for (const rule of RULES) {
    const r = rule(inputs);
    if (r) return r;
  }
  return inputs;
}

/** `n` with each input replaced by `f(input)`; the same object when nothing changed. */
function withInputs(n: LogicalNode, f: (i: LogicalNode) => LogicalNode): LogicalNode {
  switch (n.kind) {
    case 'scan':
      return n;
    case 'union': {
      const inputs = n.inputs.map(f);
      return inputs.every((x, i) => x === n.inputs[i]) ? n : { ...n, inputs };
    }
    case 'join': {
      const [left, right] = [f(n.left), f(n.right)];
      return left === n.left && right === n.right ? n : { ...n, left, right };
    }
    default: {
      const input = f(n.input);
      return input === n.input ? n : ({ ...n, input } as LogicalNode);
    }
  }
}

function mergeFilters(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'filter' || n.input.kind !== 'filter') return undefined;
  return { ...n, input: n.input.input, condition: and([n.input.condition, n.condition]) };
}

function mergeProjects(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'project' || n.input.kind !== 'project') return undefined;
  const inner = n.input;
  if (!inner.exprs.every((e) => isDeterministic(e.expr))) return undefined;
  const by = new Map(inner.exprs.map((e) => [e.name, e.expr]));
  return { ...n, input: inner.input, exprs: n.exprs.map((e) => ({ name: e.name, expr: substitute(e.expr, by) })) };
}

function filterThroughProject(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'filter' || n.input.kind !== 'project') return undefined;
  const p = n.input;
  const used = columnsOf(n.condition);
  if (p.exprs.some((e) => used.has(e.name) && !isDeterministic(e.expr))) return undefined;
  const by = new Map(p.exprs.map((e) => [e.name, e.expr]));
  return {
    ...p,
    input: { kind: 'filter', input: p.input, condition: substitute(n.condition, by), fields: p.input.fields },
  };
}

/** A filter on the input's own columns runs before rows are assigned to windows (the binder refused others). */
function filterThroughWindow(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'filter' || n.input.kind !== 'windowTvf') return undefined;
  const w = n.input;
  const own = new Set(w.input.fields.map((f) => f.name));
  if (![...columnsOf(n.condition)].every((c) => own.has(c))) return undefined;
  return { ...w, input: { kind: 'filter', input: w.input, condition: n.condition, fields: w.input.fields } };
}

function filterIntoScan(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'filter' || n.input.kind !== 'scan' || !isDeterministic(n.condition)) return undefined;
  const scan = n.input;
  // Over a projected scan, the condition reads the projection's expressions; else the table's columns.
  const by = new Map((scan.project ?? scanProjection(scan)).map((e) => [e.name, e.expr]));
  const condition = substitute(n.condition, by);
  return { ...scan, filter: scan.filter ? and([scan.filter, condition]) : condition };
}

function projectIntoScan(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'project' || n.input.kind !== 'scan') return undefined;
  const scan = n.input;
  const by = new Map((scan.project ?? scanProjection(scan)).map((e) => [e.name, e.expr]));
  const project = n.exprs.map((e) => ({ name: e.name, expr: substitute(e.expr, by) }));
  return { ...scan, project, fields: n.fields } satisfies ScanNode;
}

/**
 * The names a projection gives an aggregation's columns become the aggregation's own (its result
 * builds rows with them); what the projection still does (reorder, drop) stays, as plain references a
 * join or dropIdentityProject folds away. Aggregations that differ only in what a query keeps of them
 * then have one shape and are planned once (Nexmark q5 counts bids per auction and window twice).
 */
function renameIntoAggregate(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'project' || n.input.kind !== 'aggregate') return undefined;
  const agg = n.input;
  const refs = n.exprs.map((e) => (e.expr.kind === 'column' ? e.expr.name.parts[0]! : undefined));
  if (refs.some((r) => r === undefined) || new Set(refs).size !== refs.length) return undefined;
  const renamed = new Map<string, string>(
    refs.map((r, i): [string, string] => [r!, n.exprs[i]!.name]).filter(([r, name]) => r !== name),
  );
  if (renamed.size === 0) return undefined;
  const newName = (old: string): string => renamed.get(old) ?? old;
  const names = agg.fields.map((f) => newName(f.name));
  if (new Set(names).size !== names.length) return undefined;
  const input: LogicalNode = {
    ...agg,
    keys: agg.keys.map((k) => ({ ...k, name: newName(k.name) })),
    aggs: agg.aggs.map((a) => ({ ...a, name: newName(a.name) })),
    fields: agg.fields.map((f) => ({ name: newName(f.name), type: f.type })),
  };
  return { ...n, input, exprs: n.exprs.map((e) => ({ name: e.name, expr: fieldRef(e.name) })) };
}

/** Below a GROUP BY without a window only its keys and aggregated values are needed. */
function pruneBelowGroupAggregate(n: Extract<LogicalNode, { kind: 'aggregate' }>): LogicalNode | undefined {
  const needed = new Set<string>();
  for (const k of n.keys) columnsOf(k.expr, needed);
  for (const a of n.aggs) if (a.arg) columnsOf(a.arg, needed);
  const kept = n.input.fields.filter((f) => needed.has(f.name));
  if (kept.length === n.input.fields.length || kept.length === 0) return undefined;
  return {
    ...n,
    input: {
      kind: 'project',
      input: n.input,
      exprs: kept.map((f) => ({ name: f.name, expr: fieldRef(f.name) })),
      fields: kept,
    },
  };
}

/**
 * Below a window aggregation only the keys, the aggregated values and the time column are needed: a
 * projection to those goes under the window (and so into the scan), so rows cross the shuffle small.
 */
function pruneBelowWindowAggregate(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'aggregate') return undefined;
  if (!n.window) return pruneBelowGroupAggregate(n);
  let tvf = n.input;
  while (tvf.kind === 'filter') tvf = tvf.input;
  if (tvf.kind !== 'windowTvf') return undefined;
  const below = tvf.input;
  // A processing-time window reads the clock, not the column.
  const needed = new Set<string>(tvf.window.time === 'event' ? [tvf.window.timeField] : []);
  for (const k of n.keys) columnsOf(k.expr, needed);
  for (const a of n.aggs) if (a.arg) columnsOf(a.arg, needed);
  for (let f = n.input; f.kind === 'filter'; f = f.input) columnsOf(f.condition, needed);
  const kept = below.fields.filter((f) => needed.has(f.name));
  if (kept.length === below.fields.length) return undefined;
  const project: LogicalNode = {
    kind: 'project',
    input: below,
    exprs: kept.map((f) => ({ name: f.name, expr: fieldRef(f.name) })),
    fields: kept,
  };
  const windowFields = tvf.fields.filter((f) => !below.fields.includes(f));
  const newTvf: LogicalNode = { ...tvf, input: project, fields: [...kept, ...windowFields] };
  const rebuild = (x: LogicalNode): LogicalNode =>
    x.kind === 'filter' ? { ...x, input: rebuild(x.input), fields: newTvf.fields } : newTvf;
  return { ...n, input: rebuild(n.input) };
}

/** `WHERE rownum <= N` over a ROW_NUMBER() makes it a Top-N: only the first N of each partition are kept. */
function limitRank(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'filter' || n.input.kind !== 'rank') return undefined;
  const rank = n.input;
  const isRank = (e: Expr): boolean => e.kind === 'column' && e.name.parts[0] === rank.rankField;
  const int = (e: Expr): number | undefined =>
    e.kind === 'number' && /^\d+$/.test(e.text) ? Number(e.text) : undefined;
  let limit: number | undefined;
  const rest = conjuncts(n.condition).filter((c) => {
    if (c.kind !== 'binary') return true;
    const [op, v] = isRank(c.left)
      ? [c.op, int(c.right)]
      : isRank(c.right)
        ? [({ '>=': '<=', '>': '<', '=': '=' } as Record<string, string>)[c.op], int(c.left)]
        : [undefined, undefined];
    const n_ =
      v === undefined ? undefined : op === '<=' ? v : op === '<' ? v - 1 : op === '=' && v === 1 ? 1 : undefined;
    if (n_ === undefined) return true;
    limit = Math.min(limit ?? Infinity, n_);
    return false;
  });
  if (limit === undefined) return undefined;
  const limited: LogicalNode = { ...rank, limit: Math.min(rank.limit ?? Infinity, limit) };
  return rest.length === 0 ? limited : { ...n, input: limited, condition: and(rest) };
}

/** A projection that passes its input's fields through as they are, in order, is no work at all. */
function dropIdentityProject(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'project') return undefined;
  const f = n.input.fields;
  const same =
    n.exprs.length === f.length &&
    n.exprs.every((e, i) => e.name === f[i]!.name && e.expr.kind === 'column' && e.expr.name.parts[0] === f[i]!.name);
  return same ? n.input : undefined;
}

/** Every expression of the plan with its constant sub-expressions computed once, here. */
function foldConstants(n: LogicalNode): LogicalNode {
  const node = withInputs(n, foldConstants);
  const fold = (e: Expr, fields: readonly Field[]): Expr => foldExpr(e, fields);
  const named = (xs: NamedExpr[], fields: readonly Field[]): NamedExpr[] =>
    xs.map((x) => ({ name: x.name, expr: fold(x.expr, fields) }));
  switch (node.kind) {
    case 'filter':
      return { ...node, condition: fold(node.condition, node.input.fields) };
    case 'project':
      return { ...node, exprs: named(node.exprs, node.input.fields) };
    case 'aggregate':
      return {
        ...node,
        keys: named(node.keys, node.input.fields),
        aggs: node.aggs.map((a) => (a.arg ? { ...a, arg: fold(a.arg, node.input.fields) } : a)),
      };
    case 'join':
      return node.condition ? { ...node, condition: fold(node.condition, node.fields) } : node;
    default:
      return node;
  }
}

const FOLDABLE = new Set(['INT', 'BIGINT', 'DOUBLE', 'BOOLEAN', 'STRING']);

function foldExpr(e: Expr, fields: readonly Field[]): Expr {
  const isLiteral = ['number', 'string', 'boolean', 'null', 'interval', 'timestamp', 'column', 'star'].includes(e.kind);
  if (isLiteral) return e;
  const constant =
    !some(e, (x) => x.kind === 'column' || x.kind === 'star' || (x.kind === 'call' && x.over !== undefined)) &&
    isDeterministic(e);
  if (constant) {
    const t = typeOf(e, scopeOf(fields));
    if (FOLDABLE.has(t.kind)) {
      let v: unknown;
      try {
        v = compileFunction<(r: undefined) => unknown>(new ExprWriter([]).fn(e))(undefined);
      } catch {
        return e; // left for run time, where it fails as the query says
      }
      if (typeof v === 'string') return { kind: 'string', value: v, at: e.at };
      if (typeof v === 'boolean') return { kind: 'boolean', value: v, at: e.at };
      if (typeof v === 'number' && Number.isFinite(v)) {
        const text = t.kind === 'DOUBLE' && Number.isInteger(v) ? `${v}.0` : String(v);
        if (v >= 0) return { kind: 'number', text, at: e.at };
        return { kind: 'unary', op: '-', operand: { kind: 'number', text: text.slice(1), at: e.at }, at: e.at };
      }
    }
  }
  return mapChildren(e, (c) => foldExpr(c, fields));
}
