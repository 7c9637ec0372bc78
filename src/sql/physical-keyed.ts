/**
 * Physical planning of the keyed operators that are more than one SDK call: joins (regular, interval,
 * window) and the window Top-N, and the OVER aggregation. Each takes its inputs already planned and returns the stream it makes.
 */
import type { DataStream, KeyedStream } from '../sdk/index.js';
import { Windows } from '../sdk/index.js';
import type { Expr } from './ast.js';
import { aggregateSource, compileAggregate, keySource, type GeneratedAggregate } from './aggregates.js';
import { access, compileFunction, ExprWriter, propertyName } from './codegen.js';
import {
  windowBounds,
  type JoinNode,
  type NamedExpr,
  type OverNode,
  type RankNode,
  type WindowDef,
} from './logical.js';
import { printExpr } from './printer.js';

type Row = Record<string, unknown>;
type RowFn<R> = (row: Row, ctx?: unknown) => R;

/**
 * A regular inner join: both sides keyed by their join keys; each row is kept (per key, in keyed
 * state that checkpoints like any other) and joined with every row of the other side kept so far.
 * Inputs that only append give a join that only appends. A row whose key is NULL joins nothing.
 * A window join (the optimizer's joinInWindows) keeps rows only until their window closes.
 */
export function joinStreams(n: JoinNode, left: DataStream<Row>, right: DataStream<Row>): DataStream<Row> {
  const named = (keys: Expr[]): NamedExpr[] => keys.map((expr, i) => ({ name: `k${i}`, expr }));
  const leftKey = compileFunction<RowFn<unknown>>(keySource(named(n.leftKeys), n.left.fields, true));
  const rightKey = compileFunction<RowFn<unknown>>(keySource(named(n.rightKeys), n.right.fields, true));
  const combine = compileFunction<(l: Row, r: Row) => Row>(
    `(l, r) => ({ ${n.fieldMap.map((m) => `${propertyName(m.name)}: ${access(m.side === 'left' ? 'l' : 'r', m.from)}`).join(', ')} })`,
  );
  const cond = n.condition
    ? compileFunction<RowFn<boolean>>(new ExprWriter(n.fields).predicate(n.condition))
    : undefined;
  const emit = (l: Row, r: Row, out: { collect(v: Row): void }): void => {
    const row = combine(l, r);
    if (!cond || cond(row)) out.collect(row);
  };
  const keys = n.leftKeys.map((k, i) => `${printExpr(k)} = ${printExpr(n.rightKeys[i]!)}`).join(' AND ');
  if (n.window) {
    // Both sides' rows carry their window's end - 1 as timestamp: in windows of the slide, each row
    // falls in exactly the one window it was aggregated for.
    const joined = left
      .join(right)
      .where((l) => leftKey(l))
      .equalTo((r) => rightKey(r))
      .window(Windows.tumbling(n.window.slideMs ?? n.window.sizeMs!))
      .apply((l, r) => combine(l, r))
      .name(`window join on ${keys}`);
    return cond ? joined.filter((row) => cond(row)).name(`where ${printExpr(n.condition!)}`) : joined;
  }
  if (n.interval) {
    const joined = left
      .keyBy((l) => leftKey(l))
      .intervalJoin(right.keyBy((r) => rightKey(r)))
      .between(n.interval.lowerMs, n.interval.upperMs)
      .process<Row>({ processElement: (l, r, _ctx, out) => emit(l, r, out) })
      .name(`interval join on ${keys}`);
    return joined;
  }
  const nullKey = (k: unknown): boolean => k == null;
  return left
    .connect(right)
    .keyBy(
      (l) => leftKey(l),
      (r) => rightKey(r),
    )
    .process<Row>({
      processElement1(l, ctx, out) {
        if (nullKey(ctx.key)) return;
        ctx.state.list<Row>('left').add(l);
        for (const r of ctx.state.list<Row>('right').get()) emit(l, r, out);
      },
      processElement2(r, ctx, out) {
        if (nullKey(ctx.key)) return;
        ctx.state.list<Row>('right').add(r);
        for (const l of ctx.state.list<Row>('left').get()) emit(l, r, out);
      },
    })
    .name(`join on ${keys}`);
}

/**
 * A window Top-N: the rows of each partition (which includes the window below) meet in a tumbling
 * window of the slide (their timestamps are the window's end - 1), are sorted when it closes, and the
 * first N go on numbered. NULLs sort first ascending and last descending, as in Flink.
 */
export function topNStream(n: RankNode, input: DataStream<Row>): DataStream<Row> {
  const w = windowBounds(n.input)!;
  const named = n.partitionBy.map((expr, i) => ({ name: `p${i}`, expr }));
  const keyFn = compileFunction<RowFn<unknown>>(keySource(named, n.input.fields));
  const writer = new ExprWriter(n.input.fields);
  const orderKeys = n.orderBy.map((o) => ({
    get: compileFunction<RowFn<unknown>>(writer.fn(o.expr)),
    sign: o.descending ? -1 : 1,
  }));
  const compare = (a: Row, b: Row): number => {
    for (const k of orderKeys) {
      const [x, y] = [k.get(a), k.get(b)];
      if (x === y) continue;
      if (x == null) return -k.sign;
      if (y == null) return k.sign;
      return (x < y ? -1 : 1) * k.sign;
    }
    return 0;
  };
  const limit = n.limit!;
  const rankField = n.rankField;
  return input
    .keyBy((r) => keyFn(r))
    .window(Windows.tumbling(w.window.slideMs ?? w.window.sizeMs!))
    .process<Row>({
      process(_key, _window, rows, out) {
        rows.sort(compare);
        for (let i = 0; i < rows.length && i < limit; i++) out.collect({ ...rows[i]!, [rankField]: i + 1 });
      },
    })
    .name(`top ${limit} by ${n.orderBy.map((o) => printExpr(o.expr)).join(', ')}`);
}

/**
 * An OVER aggregation on event time: a row waits in its key's state until the watermark passes its
 * time (a late row is dropped, as in Flink), then goes on with the aggregates over its frame: from the
 * key's first row (running accumulators), or over the rows kept for the frame (the last n + 1 rows, or
 * those within the interval, its peers at the same time included).
 */
export function overStream(n: OverNode, input: DataStream<Row>): DataStream<Row> {
  const named = n.partitionBy.map((expr, i) => ({ name: `p${i}`, expr }));
  const keyFn = compileFunction<RowFn<unknown>>(keySource(named, n.input.fields));
  const agg = compileAggregate(
    aggregateSource(
      n.aggs,
      n.input.fields,
      n.aggs.map((call) => ({ name: call.name, from: { kind: 'aggregate', call } })),
    ),
  );
  const { unit, preceding } = n.frame;
  const NO_WINDOW = { start: 0, end: 0 };
  const over = (rows: readonly Row[]): Row => {
    const acc = agg.create();
    for (const r of rows) agg.add(r, acc);
    return agg.result(acc, undefined, NO_WINDOW);
  };
  return input
    .keyBy((r) => keyFn(r))
    .process<Row>({
      processElement(r, ctx) {
        const ts = ctx.timestamp;
        if (ts === undefined || ts <= ctx.timers.currentWatermark()) return;
        const pending = ctx.state.map<number, Row[]>('pending');
        pending.put(ts, [...(pending.get(ts) ?? []), r]);
        ctx.timers.registerEventTime(ts);
      },
      onTimer(ts, ctx, out) {
        const pending = ctx.state.map<number, Row[]>('pending');
        const rows = pending.get(ts) ?? [];
        pending.remove(ts);
        if (preceding === null) {
          const accState = ctx.state.value<unknown[]>('acc');
          const acc = accState.value() ?? agg.create();
          if (unit === 'RANGE') {
            for (const r of rows) agg.add(r, acc);
            const values = agg.result(acc, undefined, NO_WINDOW);
            for (const r of rows) out.collect({ ...r, ...values });
          } else {
            for (const r of rows) {
              agg.add(r, acc);
              out.collect({ ...r, ...agg.result(acc, undefined, NO_WINDOW) });
            }
          }
          accState.update(acc);
          return;
        }
        const frameState = ctx.state.value<{ ts: number; row: Row }[]>('frame');
        let frame = frameState.value() ?? [];
        if (unit === 'RANGE') {
          frame = [...frame.filter((f) => f.ts >= ts - preceding), ...rows.map((row) => ({ ts, row }))];
          const values = over(frame.map((f) => f.row));
          for (const r of rows) out.collect({ ...r, ...values });
        } else {
          for (const row of rows) {
            frame = [...frame, { ts, row }].slice(-(preceding + 1));
            out.collect({ ...row, ...over(frame.map((f) => f.row)) });
          }
        }
        frameState.update(frame);
      },
    })
    .name(`over ${n.aggs.map((a) => a.fn).join(', ')} by ${n.partitionBy.map(printExpr).join(', ') || 'all'}`);
}

/**
 * A CUMULATE window aggregation, which the engine has no window for: per key, an accumulator per
 * window end in keyed state. A row enters every window of its period that ends after it (the period's
 * windows grow by a step up to its size); each fires when time passes its end and is dropped.
 */
export function cumulateStream(
  w: WindowDef,
  keyed: KeyedStream<Row, unknown>,
  agg: GeneratedAggregate,
  keys: string,
): DataStream<Row> {
  const size = w.sizeMs!;
  const step = w.slideMs!;
  const event = w.time === 'event';
  return keyed
    .process<Row>({
      processElement(r, ctx) {
        const t = event ? ctx.timestamp : ctx.timers.currentProcessingTime();
        if (t === undefined) return;
        const start = t - (((t % size) + size) % size);
        const accs = ctx.state.map<number, unknown[]>('windows');
        for (let end = start + step * (Math.floor((t - start) / step) + 1); end <= start + size; end += step) {
          if (event && end - 1 <= ctx.timers.currentWatermark()) continue; // that window has fired: late for it
          const acc = accs.get(end) ?? agg.create();
          accs.put(end, agg.add(r, acc));
          if (event) ctx.timers.registerEventTime(end - 1);
          else ctx.timers.registerProcessingTime(end);
        }
      },
      onTimer(ts, ctx, out) {
        const end = event ? ts + 1 : ts;
        const accs = ctx.state.map<number, unknown[]>('windows');
        const acc = accs.get(end);
        if (!acc) return;
        accs.remove(end);
        const start = end - 1 - ((((end - 1) % size) + size) % size);
        out.collect(agg.result(acc, ctx.key, { start, end }));
      },
    })
    .name(`CUMULATE window aggregate${keys ? ` by ${keys}` : ''}`);
}
