/**
 * Physical planning: an optimized logical plan to DataStream calls on a JobEnvironment, so a SQL job is
 * the same JobGraphSpec the SDK makes and runs, checkpoints and places like any other. Every function
 * is generated source compiled once here (codegen.ts, aggregates.ts); operator ids follow from the plan
 * alone, so every process that plans the same statement binds the same functions.
 */
import type { DataStream, JobEnvironment } from '../sdk/index.js';
import { Windows } from '../sdk/index.js';
import {
  aggregateSource,
  compileAggregate,
  keySource,
  retractableAggregateSource,
  type OutputSource,
  type RetractableAggregate,
} from './aggregates.js';
import { compileFunction, ExprWriter } from './codegen.js';
import { connectorOptions, isCsv, rowIsValue } from './connector-options.js';
import { csvReader, csvWriter, pgRowReader } from './csv.js';
import {
  isUpdating,
  type AggregateNode,
  type Field,
  type LogicalNode,
  type ScanNode,
  type WindowDef,
} from './logical.js';
import { cumulateStream, joinStreams, overStream, topNStream } from './physical-keyed.js';
import { printExpr } from './printer.js';
import { scanProjection } from './scan.js';

type Row = Record<string, unknown>;
type RowFn<R> = (row: Row, ctx?: unknown) => R;

/** Where a query's rows go: a catalog table's connector, or the caller (collect, under a name). */
export type SqlSink =
  | {
      kind: 'table';
      table: string;
      connector: string;
      options: Record<string, unknown>;
      /** A CSV file table: rows written as lines of these columns. */ csv?: { columns: Field[]; delimiter: string };
    }
  | { kind: 'collect'; name: string };

/** Plans queries into one job: the queries of a statement set share sources and common sub-plans. */
export function planToStreams(env: JobEnvironment, queries: readonly { plan: LogicalNode; sink: SqlSink }[]): void {
  const planner = new PhysicalPlanner(env);
  for (const { plan, sink } of queries) {
    const stream = planner.node(plan);
    if (sink.kind === 'collect')
      (isUpdating(plan) ? materialized(stream) : stream).collect(sink.name).name(`collect ${sink.name}`);
    else if (isUpdating(plan) && sink.options.mode === 'upsert')
      upserts(stream).sinkTo(sink.connector, sink.options).name(`sink ${sink.table}`);
    else if (sink.csv) {
      const line = csvWriter(sink.csv.columns, sink.csv.delimiter);
      stream
        .map((r) => line(r))
        .name(`${sink.table} as CSV`)
        .sinkTo(sink.connector, sink.options)
        .name(`sink ${sink.table}`);
    } else stream.sinkTo(sink.connector, sink.options).name(`sink ${sink.table}`);
  }
}

/**
 * Updates as upserts: the new row of each change (+I, +U) and nothing for the old (-U), which the new
 * row replaces under the table's key; print and blackhole take the changes as they are.
 */
function upserts(updates: DataStream<Row>): DataStream<Row> {
  return updates
    .filter((r) => r.$op !== '-U')
    .map((r) => {
      const { $op: _, ...row } = r;
      return row;
    })
    .name('upserts');
}

/**
 * Updates as the rows they leave at the end: each distinct row counted up by +I/+U and down by -U/-D,
 * in keyed state (so a restart from a checkpoint keeps it), emitted as often as it stands when the
 * input ends (the watermark +inf fires the timer every row registered).
 */
function materialized(updates: DataStream<Row>): DataStream<Row> {
  const END = Number.MAX_SAFE_INTEGER;
  return updates
    .keyBy((r) => {
      const { $op: _, ...row } = r;
      return JSON.stringify(row);
    })
    .process<Row>({
      processElement(r, ctx) {
        const count = ctx.state.value<number>('count');
        const n = (count.value() ?? 0) + (r.$op === '-U' || r.$op === '-D' ? -1 : 1);
        if (n === 0) count.clear();
        else count.update(n);
        ctx.timers.registerEventTime(END);
      },
      onTimer(_ts, ctx, out) {
        const n = ctx.state.value<number>('count').value() ?? 0;
        const row = JSON.parse(ctx.key as string) as Row;
        for (let i = 0; i < n; i++) out.collect(row);
      },
    })
    .name('final rows of the updates');
}

class PhysicalPlanner {
  /**
   * One source per table and options: scans of the same table (a self-join, views of one event table)
   * share it, each with its own filter and projection after it, as Flink reuses sources.
   */
  private readonly sources = new Map<string, DataStream<Row>>();
  /** Sub-plans already planned, by their shape (positions left out): one computed twice is planned once. */
  private readonly planned = new Map<string, DataStream<Row>>();

  constructor(private readonly env: JobEnvironment) {}

  node(n: LogicalNode): DataStream<Row> {
    const shape = JSON.stringify(n, (k, v: unknown) => (k === 'at' ? undefined : v));
    let s = this.planned.get(shape);
    if (!s) {
      s = this.plan(n);
      this.planned.set(shape, s);
    }
    return s;
  }

  private plan(n: LogicalNode): DataStream<Row> {
    switch (n.kind) {
      case 'scan':
        return this.scan(n);
      case 'filter': {
        const w = new ExprWriter(n.input.fields);
        const src = w.predicate(n.condition);
        return this.perRow(this.node(n.input), 'filter', src, w.usesContext, `where ${printExpr(n.condition)}`);
      }
      case 'project': {
        const w = new ExprWriter(n.input.fields);
        const src = w.object(n.exprs, isUpdating(n.input));
        return this.perRow(
          this.node(n.input),
          'map',
          src,
          w.usesContext,
          `select ${n.fields.map((f) => f.name).join(', ')}`,
        );
      }
      case 'windowTvf':
        return this.windowRows(n);
      case 'aggregate':
        return this.aggregate(n);
      case 'union': {
        const [first, ...rest] = n.inputs.map((i) => this.node(i));
        return first!.union(...rest);
      }
      case 'join':
        return joinStreams(n, this.node(n.left), this.node(n.right));
      case 'rank':
        return topNStream(n, this.node(n.input));
      case 'over':
        return overStream(n, this.node(n.input));
    }
  }

  /** A filter or map over rows; one that reads the watermark runs as a process function to have it. */
  private perRow(
    input: DataStream<Row>,
    kind: 'filter' | 'map',
    source: string,
    usesContext: boolean,
    name: string,
  ): DataStream<Row> {
    const fn = compileFunction<RowFn<unknown>>(source);
    if (usesContext) {
      return input
        .process<Row>({
          processElement(value, ctx, out) {
            const v = fn(value, ctx);
            if (kind === 'map') out.collect(v as Row);
            else if (v === true) out.collect(value);
          },
        })
        .name(name);
    }
    return (kind === 'filter' ? input.filter(fn as RowFn<boolean>) : input.map(fn as RowFn<Row>)).name(name);
  }

  private scan(n: ScanNode): DataStream<Row> {
    const physical = n.columns.filter((c) => n.computed[c.name] === undefined);
    const options = connectorOptions(n.connector, n.options, physical, 0, 'source');
    const key = JSON.stringify([n.connector, options]);
    let s = this.sources.get(key);
    if (!s) {
      s = this.env.fromSource<Row>(n.connector, options).name(n.table);
      if (rowIsValue(n.connector)) s = s.map((r) => r.value as Row).name(`${n.table} values`);
      if (n.connector === 'postgres') {
        const typed = pgRowReader(physical);
        s = s.map((r) => typed(r)).name(`${n.table} typed`);
      }
      if (isCsv(n.connector, n.options)) {
        const row = csvReader(physical, n.options['csv.field-delimiter'] ?? ',');
        s = s.map((line) => row(line as unknown as string)).name(`${n.table} from CSV`);
      }
      this.sources.set(key, s);
    }
    const raw: Field[] = physical;
    if (n.filter) {
      const w = new ExprWriter(raw);
      s = this.perRow(s, 'filter', w.predicate(n.filter), w.usesContext, `where ${printExpr(n.filter)}`);
    }
    if (n.watermark) {
      const time = scanProjection(n).find((c) => c.name === n.watermark!.column)!.expr;
      const ts = compileFunction<RowFn<number>>(new ExprWriter(raw).fn(time));
      s = s
        .assignTimestamps((r) => ts(r), { maxOutOfOrdernessMs: n.watermark.delayMs })
        .name(`watermark ${n.watermark.column}`);
    }
    const w = new ExprWriter(raw);
    return this.perRow(
      s,
      'map',
      w.object(n.project ?? scanProjection(n)),
      w.usesContext,
      `select ${n.fields.map((f) => f.name).join(', ')}`,
    );
  }

  private aggregate(n: AggregateNode): DataStream<Row> {
    if (!n.window) return this.groupAggregate(n);
    if (n.window.cascade) return this.cascadedAggregate(n, n.window);
    const tvf = n.input;
    if (!n.window || tvf.kind !== 'windowTvf')
      throw new Error('unreachable: the binder refuses a GROUP BY without a window');
    const input = this.node(tvf.input);
    const windowField: Record<string, 'start' | 'end' | 'time'> = {
      window_start: 'start',
      window_end: 'end',
      window_time: 'time',
    };
    const isWindowKey = (name: string): boolean => windowField[name] !== undefined;
    const keyOf = (e: AggregateNode['keys'][number]): string | undefined =>
      e.expr.kind === 'column' && isWindowKey(e.expr.name.parts[0]!) ? e.expr.name.parts[0] : undefined;
    const dataKeys = n.keys.filter((k) => keyOf(k) === undefined);
    const outputs = n.fields.map((f): { name: string; from: OutputSource } => {
      const key = n.keys.find((k) => k.name === f.name);
      if (key) {
        const w = keyOf(key);
        return {
          name: f.name,
          from: w
            ? { kind: 'window', which: windowField[w]! }
            : { kind: 'key', index: dataKeys.indexOf(key), keys: dataKeys },
        };
      }
      return { name: f.name, from: { kind: 'aggregate', call: n.aggs.find((a) => a.name === f.name)! } };
    });
    const agg = compileAggregate(aggregateSource(n.aggs, tvf.input.fields, outputs));
    const keyFn = compileFunction<RowFn<unknown>>(keySource(dataKeys, tvf.input.fields));
    const keys = dataKeys.map((k) => printExpr(k.expr)).join(', ');
    if (n.window.kind === 'CUMULATE')
      return cumulateStream(
        n.window,
        input.keyBy((r) => keyFn(r)),
        agg,
        keys,
      );
    return input
      .keyBy((r) => keyFn(r))
      .window(assigner(n.window), { time: n.window.time })
      .aggregate<unknown[], Row>({ create: agg.create, add: agg.add, merge: agg.merge, result: agg.result })
      .name(`${n.window.kind} window aggregate${keys ? ` by ${keys}` : ''}`);
  }

  /**
   * A GROUP BY without a window: per key, an accumulator rows enter and (from an updating input) leave;
   * each change of the key's result goes out as -U of the old row and +U of the new (+I the first time,
   * -D when the group empties), as Flink's GroupAggregate emits them.
   */
  private groupAggregate(n: AggregateNode): DataStream<Row> {
    const outputs = n.fields.map((f): { name: string; from: OutputSource } => {
      const index = n.keys.findIndex((k) => k.name === f.name);
      return {
        name: f.name,
        from:
          index >= 0
            ? { kind: 'key', index, keys: n.keys }
            : { kind: 'aggregate', call: n.aggs.find((a) => a.name === f.name)! },
      };
    });
    const agg = compileFunction<RetractableAggregate>(
      retractableAggregateSource(n.aggs, n.keys, n.input.fields, outputs),
    );
    const keyFn = compileFunction<RowFn<unknown>>(keySource(n.keys, n.input.fields));
    const same = (a: Row, b: Row): boolean => n.fields.every((f) => a[f.name] === b[f.name]);
    return this.node(n.input)
      .keyBy((r) => keyFn(r))
      .process<Row>({
        processElement(r, ctx, out) {
          const accState = ctx.state.value<unknown[]>('acc');
          const lastState = ctx.state.value<Row>('last');
          const acc = accState.value() ?? agg.create();
          if (r.$op === '-U' || r.$op === '-D') agg.retract(r, acc);
          else agg.add(r, acc);
          const last = lastState.value();
          if (acc[0] === 0) {
            accState.clear();
            lastState.clear();
            if (last) out.collect({ ...last, $op: '-D' });
            return;
          }
          accState.update(acc);
          const row = agg.result(acc, ctx.key);
          if (last && same(last, row)) return;
          if (last) out.collect({ ...last, $op: '-U' });
          out.collect({ ...row, $op: last ? '+U' : '+I' });
          lastState.update(row);
        },
      })
      .name(`group aggregate${n.keys.length > 0 ? ` by ${n.keys.map((k) => printExpr(k.expr)).join(', ')}` : ''}`);
  }

  /**
   * A GROUP BY over the start and end of a window aggregation below: its rows carry end - 1 as their
   * timestamp, so in tumbling windows of the slide each group is complete when the watermark passes its
   * end, and fires once. Every key (start and end included) comes from the rows.
   */
  private cascadedAggregate(n: AggregateNode, w: WindowDef): DataStream<Row> {
    const outputs = n.fields.map((f): { name: string; from: OutputSource } => {
      const index = n.keys.findIndex((k) => k.name === f.name);
      return {
        name: f.name,
        from:
          index >= 0
            ? { kind: 'key', index, keys: n.keys }
            : { kind: 'aggregate', call: n.aggs.find((a) => a.name === f.name)! },
      };
    });
    const agg = compileAggregate(aggregateSource(n.aggs, n.input.fields, outputs));
    const keyFn = compileFunction<RowFn<unknown>>(keySource(n.keys, n.input.fields));
    return this.node(n.input)
      .keyBy((r) => keyFn(r))
      .window(Windows.tumbling(w.slideMs ?? w.sizeMs!))
      .aggregate<unknown[], Row>({ create: agg.create, add: agg.add, merge: agg.merge, result: agg.result })
      .name(`window aggregate by ${n.keys.map((k) => printExpr(k.expr)).join(', ')}`);
  }

  /** A windowing TVF read directly (no aggregation; TUMBLE, HOP or CUMULATE on event time): each row once per window it falls in. */
  private windowRows(n: Extract<LogicalNode, { kind: 'windowTvf' }>): DataStream<Row> {
    const def = n.window;
    const size = def.sizeMs!;
    const slide = def.slideMs ?? size;
    const timeFn = compileFunction<RowFn<number>>(
      new ExprWriter(n.input.fields).fn({
        kind: 'column',
        name: { kind: 'name', parts: [def.timeField], at: 0 },
        at: 0,
      }),
    );
    const cumulate = def.kind === 'CUMULATE';
    return this.node(n.input)
      .flatMap<Row>((r, out) => {
        const t = timeFn(r);
        if (t == null) return;
        if (cumulate) {
          const start = t - (((t % size) + size) % size);
          for (let end = start + slide * Math.floor((t - start) / slide + 1); end <= start + size; end += slide)
            out.collect({ ...r, window_start: start, window_end: end, window_time: end - 1 });
          return;
        }
        const last = t - (((t % slide) + slide) % slide);
        for (let start = last; start > t - size; start -= slide)
          out.collect({ ...r, window_start: start, window_end: start + size, window_time: start + size - 1 });
      })
      .name(`${def.kind} windows of ${def.timeField}`);
  }
}

function assigner(w: WindowDef): ReturnType<typeof Windows.tumbling> {
  switch (w.kind) {
    case 'TUMBLE':
      return Windows.tumbling(w.sizeMs!);
    case 'HOP':
      return Windows.sliding(w.sizeMs!, w.slideMs!);
    case 'SESSION':
      return Windows.session(w.gapMs!);
    case 'CUMULATE':
      throw new Error('unreachable: CUMULATE is planned by cumulateStream');
  }
}
