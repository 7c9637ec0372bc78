/**
 * The optimizer's rules for joins: a condition taken apart into keys, per-side filters and a
 * residual; filters and projections moved to and through the join; window and interval joins
 * recognized from what the sides are and what the condition bounds.
 */
import type { Expr } from './ast.js';
import { isDeterministic } from './binder.js';
import { intervalValue } from './codegen.js';
import { and, columnsOf, conjuncts, fieldRef, substitute } from './expressions.js';
import { timestampOffset, windowBounds, type LogicalNode } from './logical.js';

/** A filter over a join is part of its condition: `FROM a, b WHERE a.k = b.k` is `a JOIN b ON a.k = b.k`. */
export function filterIntoJoin(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'filter' || n.input.kind !== 'join' || !isDeterministic(n.condition)) return undefined;
  const j = n.input;
  return { ...j, condition: j.condition ? and([j.condition, n.condition]) : n.condition };
}

/**
 * A join's condition, taken apart: `left = right` conjuncts become the keys the join partitions and
 * matches on, a conjunct over one side's fields alone filters that side before the join, and what is
 * left is checked on each joined row.
 */
export function splitJoinCondition(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'join' || !n.condition) return undefined;
  const sideOf = new Map(n.fieldMap.map((m) => [m.name, m.side]));
  const toSide = (side: 'left' | 'right'): Map<string, Expr> =>
    new Map(n.fieldMap.filter((m) => m.side === side).map((m) => [m.name, fieldRef(m.from)]));
  const [onLeft, onRight] = [toSide('left'), toSide('right')];
  const sides = (e: Expr): Set<string> => new Set([...columnsOf(e)].map((c) => sideOf.get(c)!));
  const only = (e: Expr, side: 'left' | 'right'): boolean => {
    const s = sides(e);
    return s.size === 1 && s.has(side) && isDeterministic(e);
  };
  const leftKeys = [...n.leftKeys];
  const rightKeys = [...n.rightKeys];
  const leftFilters: Expr[] = [];
  const rightFilters: Expr[] = [];
  const rest: Expr[] = [];
  for (const c of conjuncts(n.condition)) {
    if (c.kind === 'binary' && c.op === '=' && only(c.left, 'left') && only(c.right, 'right')) {
      leftKeys.push(substitute(c.left, onLeft));
      rightKeys.push(substitute(c.right, onRight));
    } else if (c.kind === 'binary' && c.op === '=' && only(c.left, 'right') && only(c.right, 'left')) {
      leftKeys.push(substitute(c.right, onLeft));
      rightKeys.push(substitute(c.left, onRight));
    } else if (only(c, 'left')) leftFilters.push(substitute(c, onLeft));
    else if (only(c, 'right')) rightFilters.push(substitute(c, onRight));
    else rest.push(c);
  }
  if (rest.length === conjuncts(n.condition).length) return undefined;
  const filtered = (input: LogicalNode, fs: Expr[]): LogicalNode =>
    fs.length === 0 ? input : { kind: 'filter', input, condition: and(fs), fields: input.fields };
  const { condition: _, ...join } = n;
  return {
    ...join,
    left: filtered(n.left, leftFilters),
    right: filtered(n.right, rightFilters),
    leftKeys,
    rightKeys,
    ...(rest.length > 0 ? { condition: and(rest) } : {}),
  };
}

/** Under a projection of a join, each side carries only the fields the projection, keys and condition read. */
export function pruneBelowJoin(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'project' || n.input.kind !== 'join') return undefined;
  const j = n.input;
  const used = new Set<string>();
  for (const e of n.exprs) columnsOf(e.expr, used);
  if (j.condition) columnsOf(j.condition, used);
  const fieldMap = j.fieldMap.filter((m) => used.has(m.name));
  if (fieldMap.length === j.fieldMap.length) return undefined;
  const side = (input: LogicalNode, which: 'left' | 'right', keys: Expr[]): LogicalNode => {
    const needed = new Set(fieldMap.filter((m) => m.side === which).map((m) => m.from));
    for (const k of keys) columnsOf(k, needed);
    const kept = input.fields.filter((f) => needed.has(f.name));
    return kept.length === input.fields.length
      ? input
      : { kind: 'project', input, exprs: kept.map((f) => ({ name: f.name, expr: fieldRef(f.name) })), fields: kept };
  };
  const join: LogicalNode = {
    ...j,
    left: side(j.left, 'left', j.leftKeys),
    right: side(j.right, 'right', j.rightKeys),
    fieldMap,
    fields: j.fields.filter((f) => used.has(f.name)),
  };
  return { ...n, input: join };
}

/** A projection that only picks, reorders and renames a join's fields is how the join builds its rows. */
export function renameIntoJoin(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'project' || n.input.kind !== 'join' || n.input.condition) return undefined;
  const j = n.input;
  const refs = n.exprs.map((e) =>
    e.expr.kind === 'column'
      ? j.fieldMap.find((m) => m.name === (e.expr as { name: { parts: string[] } }).name.parts[0])
      : undefined,
  );
  if (refs.some((r) => r === undefined)) return undefined;
  const fieldMap = refs.map((r, i) => ({ name: n.exprs[i]!.name, side: r!.side, from: r!.from }));
  return { ...j, fieldMap, fields: n.fields };
}

/** A join of two aggregations in the same window, on that window, joins window by window. */
export function joinInWindows(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'join' || n.window) return undefined;
  const [l, r] = [windowBounds(n.left), windowBounds(n.right)];
  if (!l || !r || l.window.time !== 'event' || (l.window.kind !== 'TUMBLE' && l.window.kind !== 'HOP'))
    return undefined;
  const same = (['kind', 'sizeMs', 'slideMs'] as const).every((k) => l.window[k] === r.window[k]);
  const isRef = (e: Expr, name: string): boolean => e.kind === 'column' && e.name.parts[0] === name;
  const pairs = (a: string, b: string): boolean => n.leftKeys.some((k, i) => isRef(k, a) && isRef(n.rightKeys[i]!, b));
  return same && pairs(l.start, r.start) && pairs(l.end, r.end) ? { ...n, window: l.window } : undefined;
}

/**
 * A join whose condition bounds one side's event time to the other's (a.ts BETWEEN b.ts - INTERVAL ...
 * AND b.ts, on event-time columns or window bounds) is an interval join: rows wait only while the
 * other side's watermark could still bring a match. The condition stays, checked on each pair.
 */
export function joinInInterval(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'join' || n.window || n.interval || !n.condition || n.leftKeys.length === 0) return undefined;
  const side = new Map(n.fieldMap.map((m) => [m.name, m]));
  // A term is a time field of one side, plus or minus a constant interval: [side, ms added to its timestamp].
  const term = (e: Expr): ['left' | 'right', number] | undefined => {
    if (e.kind === 'column') {
      const m = side.get(e.name.parts[0]!);
      const off = m && timestampOffset(m.side === 'left' ? n.left : n.right, m.from);
      return m && off !== undefined ? [m.side, off] : undefined;
    }
    if (e.kind === 'binary' && (e.op === '+' || e.op === '-') && e.right.kind === 'interval') {
      const t = term(e.left);
      const ms = intervalValue(e.right);
      return t && [t[0], t[1] + (e.op === '+' ? ms : -ms)];
    }
    return undefined;
  };
  let lower = -Infinity;
  let upper = Infinity;
  const expanded = conjuncts(n.condition).flatMap((c): Expr[] =>
    c.kind === 'between' && !c.negated
      ? [
          { kind: 'binary', op: '>=', left: c.operand, right: c.low, at: c.at },
          { kind: 'binary', op: '<=', left: c.operand, right: c.high, at: c.at },
        ]
      : [c],
  );
  for (const c of expanded) {
    if (c.kind !== 'binary' || !['<', '<=', '>', '>='].includes(c.op)) continue;
    const [a, b] = [term(c.left), term(c.right)];
    if (!a || !b || a[0] === b[0]) continue;
    // As left.ts + x OP right.ts + y, so right.ts - left.ts is bounded by x - y.
    const [l, r, op] =
      a[0] === 'left'
        ? [a, b, c.op]
        : [b, a, ({ '<': '>', '<=': '>=', '>': '<', '>=': '<=' } as Record<string, string>)[c.op]!];
    const d = l[1] - r[1];
    if (op === '<=') lower = Math.max(lower, d);
    else if (op === '<') lower = Math.max(lower, d + 1);
    else if (op === '>=') upper = Math.min(upper, d);
    else upper = Math.min(upper, d - 1);
  }
  return Number.isFinite(lower) && Number.isFinite(upper) && lower <= upper
    ? { ...n, interval: { lowerMs: lower, upperMs: upper } }
    : undefined;
}

/** A side of a join that only picks and renames its input's fields is read by the join directly. */
export function referencesIntoJoin(n: LogicalNode): LogicalNode | undefined {
  if (n.kind !== 'join') return undefined;
  const unwrap = (side: LogicalNode): Map<string, string> | undefined => {
    if (side.kind !== 'project' || !side.exprs.every((e) => e.expr.kind === 'column')) return undefined;
    return new Map(side.exprs.map((e) => [e.name, (e.expr as { name: { parts: string[] } }).name.parts[0]!]));
  };
  const [l, r] = [unwrap(n.left), unwrap(n.right)];
  if (!l && !r) return undefined;
  const rename = (keys: Expr[], by: Map<string, string> | undefined): Expr[] =>
    by ? keys.map((k) => substitute(k, new Map([...by].map(([a, b]) => [a, fieldRef(b)])))) : keys;
  return {
    ...n,
    left: l ? (n.left as { input: LogicalNode }).input : n.left,
    right: r ? (n.right as { input: LogicalNode }).input : n.right,
    leftKeys: rename(n.leftKeys, l),
    rightKeys: rename(n.rightKeys, r),
    fieldMap: n.fieldMap.map((m) => {
      const by = m.side === 'left' ? l : r;
      return by ? { ...m, from: by.get(m.from)! } : m;
    }),
  };
}
