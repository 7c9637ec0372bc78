/**
 * What a window does with its records: an accumulator per key and window, created, added to, merged
 * (sessions, pre-aggregated partials) and emitted when the window fires. One for the window functions
 * of the SDK (aggregate, reduce, count, process), one for a window join.
 */
import type { AggregateFunction, Collector, ProcessWindowFunction, TimeWindow } from '../../sdk/index.js';
import { isInt32 } from '../../util/index.js';
import type { OperatorContext } from '../operator.js';

/** How a window accumulates records and what it emits when it fires. */
export interface WindowAccumulator {
  create(): unknown;
  add(acc: unknown, value: unknown, input: number): unknown;
  merge(a: unknown, b: unknown): unknown;
  emit(acc: unknown, key: unknown, window: TimeWindow, out: Collector<unknown>): void;
  /** add() returns a new accumulator and never changes one in place (so a snapshot need not copy it). */
  immutable?: boolean;
  /** create() and add() return numbers (a pane keeps them in a NumberTable). */
  numeric?: boolean;
}

const UNSET = Symbol('unset');

/**
 * A numeric accumulator as a window or a pre-aggregation emits it: a small integer when it is a 32-bit
 * integer. Read from a Float64Array an integral value is a heap number, so a record holding one has another
 * field representation, and a tuple another array kind, than the same value decoded from another process
 * (an integer column): code that sees both converts one into the other on access.
 */
export const int32IfIntegral = (x: number): number => (isInt32(x) ? x | 0 : x);

/** The accumulator for window().aggregate / reduce / count / process. */
export function windowFunctionAccumulator(op: { ctx: OperatorContext }): WindowAccumulator {
  const fn = op.ctx.spec.options.function as string;
  const udf = op.ctx.fns.udf;
  switch (fn) {
    case 'aggregate': {
      const a = udf as AggregateFunction<unknown, unknown, unknown>;
      return {
        create: () => a.create(),
        add: (acc, v) => a.add(v, acc),
        merge: (x, y) => a.merge!(x, y),
        emit: (acc, key, w, out) => out.collect(a.result(acc, key, w)),
      };
    }
    case 'reduce': {
      const r = (udf as { reduce: (a: unknown, b: unknown) => unknown }).reduce;
      return {
        create: () => UNSET,
        add: (acc, v) => (acc === UNSET ? v : r(acc, v)),
        merge: (x, y) => (x === UNSET ? y : y === UNSET ? x : r(x, y)),
        emit: (acc, _k, _w, out) => out.collect(acc),
      };
    }
    case 'count':
      return {
        create: () => 0,
        add: (acc) => (acc as number) + 1,
        merge: (x, y) => (x as number) + (y as number),
        emit: (acc, key, w, out) =>
          out.collect({ key, start: w.start, end: w.end, count: int32IfIntegral(acc as number) }),
        immutable: true,
        numeric: true,
      };
    case 'process': {
      const p = udf as ProcessWindowFunction<unknown, unknown, unknown>;
      return {
        create: () => [],
        add: (acc, v) => {
          (acc as unknown[]).push(v);
          return acc;
        },
        merge: (x, y) => (x as unknown[]).concat(y as unknown[]),
        emit: (acc, key, w, out) => p.process(key, w, acc as unknown[], out),
      };
    }
    default:
      throw new Error(`unknown window function '${fn}'`);
  }
}

/** The accumulator for a window join: buffers each side, emits the cross product per key and window. */
export function windowJoinAccumulator(op: { ctx: OperatorContext }): WindowAccumulator {
  const fn = op.ctx.fns.fn as (l: unknown, r: unknown, w: TimeWindow) => unknown;
  type Sides = { left: unknown[]; right: unknown[] };
  return {
    create: (): Sides => ({ left: [], right: [] }),
    add: (acc, v, input) => {
      (input === 0 ? (acc as Sides).left : (acc as Sides).right).push(v);
      return acc;
    },
    merge: (x, y) => ({
      left: (x as Sides).left.concat((y as Sides).left),
      right: (x as Sides).right.concat((y as Sides).right),
    }),
    emit: (acc, _key, w, out) => {
      const { left, right } = acc as Sides;
      for (const l of left) for (const r of right) out.collect(fn(l, r, w));
    },
  };
}
