/**
 * Walking and rewriting expression trees: the one place that knows every node's children, so the
 * binder, the optimizer and the code generator each say only what they change.
 */
import type { Expr } from './ast.js';

/** `e` with each direct child replaced by `f(child)`; the node itself is copied only when a child changed. */
export function mapChildren(e: Expr, f: (child: Expr) => Expr): Expr {
  switch (e.kind) {
    case 'unary':
      return { ...e, operand: f(e.operand) };
    case 'binary':
      return { ...e, left: f(e.left), right: f(e.right) };
    case 'isNull':
      return { ...e, operand: f(e.operand) };
    case 'between':
      return { ...e, operand: f(e.operand), low: f(e.low), high: f(e.high) };
    case 'in':
      return { ...e, operand: f(e.operand), list: e.list.map(f) };
    case 'like':
      return { ...e, operand: f(e.operand), pattern: f(e.pattern) };
    case 'cast':
      return { ...e, operand: f(e.operand) };
    case 'case':
      return {
        ...e,
        ...(e.operand ? { operand: f(e.operand) } : {}),
        whens: e.whens.map((w) => ({ when: f(w.when), then: f(w.then) })),
        ...(e.otherwise ? { otherwise: f(e.otherwise) } : {}),
      };
    case 'call':
      return { ...e, args: e.args.map(f) };
    default:
      return e;
  }
}

/** The direct children of `e`. */
export function childrenOf(e: Expr): Expr[] {
  const out: Expr[] = [];
  mapChildren(e, (c) => (out.push(c), c));
  return out;
}

/** Every column name `e` refers to (bound expressions: single-part names). */
export function columnsOf(e: Expr, into = new Set<string>()): Set<string> {
  if (e.kind === 'column') into.add(e.name.parts.join('.'));
  for (const c of childrenOf(e)) columnsOf(c, into);
  return into;
}

/** `e` with each column reference named in `by` replaced by its expression. */
export function substitute(e: Expr, by: ReadonlyMap<string, Expr>): Expr {
  if (e.kind === 'column') return by.get(e.name.parts.join('.')) ?? e;
  return mapChildren(e, (c) => substitute(c, by));
}

/** A reference to field `name` of the input row. */
export function fieldRef(name: string, at = 0): Expr {
  return { kind: 'column', name: { kind: 'name', parts: [name], at }, at };
}

/** The first sub-expression of `e` (itself included, depth first) that satisfies `p`. */
export function find(e: Expr, p: (e: Expr) => boolean): Expr | undefined {
  if (p(e)) return e;
  for (const c of childrenOf(e)) {
    const found = find(c, p);
    if (found) return found;
  }
  return undefined;
}

/** Whether `e` (or a sub-expression) satisfies `p`. */
export function some(e: Expr, p: (e: Expr) => boolean): boolean {
  return find(e, p) !== undefined;
}

/** The conjuncts of `a AND b AND ...`. */
export function conjuncts(e: Expr): Expr[] {
  return e.kind === 'binary' && e.op === 'AND' ? [...conjuncts(e.left), ...conjuncts(e.right)] : [e];
}

export function and(parts: Expr[]): Expr {
  return parts.reduce((l, r) => ({ kind: 'binary', op: 'AND', left: l, right: r, at: l.at }));
}

/** Functions whose result is not fixed by their arguments: never folded at plan time, never moved. */
export const NONDETERMINISTIC = new Set(['PROCTIME', 'CURRENT_WATERMARK', 'NOW', 'CURRENT_TIMESTAMP', 'RAND']);
