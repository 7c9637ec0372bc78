/**
 * The logical plan: what a bound query computes, as a tree of relational nodes whose expressions are
 * bound (every column reference is a single-part name of a field of the node's input). Each node lists
 * the fields of the rows it produces, unique by name: rows travel as plain objects with those keys.
 */
import type { Expr } from './ast.js';
import type { SqlType } from './types.js';

export interface Field {
  name: string;
  type: SqlType;
}

export type WindowKind = 'TUMBLE' | 'HOP' | 'CUMULATE' | 'SESSION';

/** A windowing table function's window: sizes in milliseconds; on event time or processing time. */
export interface WindowDef {
  kind: WindowKind;
  /** The DESCRIPTOR column: an event-time attribute, or a processing-time one (PROCTIME()). */
  timeField: string;
  time: 'event' | 'processing';
  sizeMs?: number;
  slideMs?: number;
  gapMs?: number;
  /**
   * A cascaded window: the window of an aggregation below, grouped again by its start and end (which
   * are fields of the input, named here), as Nexmark q5 takes the largest count per window.
   */
  cascade?: { start: string; end: string };
}

export interface NamedExpr {
  name: string;
  expr: Expr;
}

export const AGGREGATE_FUNCTIONS = ['COUNT', 'SUM', 'MIN', 'MAX', 'AVG'] as const;
export type AggregateFunctionName = (typeof AGGREGATE_FUNCTIONS)[number];

export interface AggregateCall {
  name: string;
  fn: AggregateFunctionName;
  /** Absent for COUNT(*). */
  arg?: Expr;
  distinct: boolean;
  type: SqlType;
}

/** A table read through its connector, with what the optimizer pushed into it. */
export interface ScanNode {
  kind: 'scan';
  table: string;
  connector: string;
  /** The table's WITH options but 'connector', as written. */
  options: Record<string, string>;
  /** The fields a row of the table has: its physical columns, then its computed ones. */
  columns: Field[];
  /** Computed columns, by name, over the physical columns. */
  computed: Record<string, Expr>;
  /** WATERMARK FOR column AS column - INTERVAL ...: the column and how late a record may be. */
  watermark?: { column: string; delayMs: number };
  /** Pushed down: rows the scan drops before anything else sees them (over physical columns). */
  filter?: Expr;
  /** Pushed down: what a row is made of (over physical columns); absent, every column. */
  project?: NamedExpr[];
  fields: Field[];
}

export type LogicalNode =
  | ScanNode
  | { kind: 'filter'; input: LogicalNode; condition: Expr; fields: Field[] }
  | { kind: 'project'; input: LogicalNode; exprs: NamedExpr[]; fields: Field[] }
  /** Rows with the window(s) they fall in: window_start, window_end, window_time added to the input's fields. */
  | { kind: 'windowTvf'; input: LogicalNode; window: WindowDef; fields: Field[]; at: number }
  | {
      kind: 'aggregate';
      input: LogicalNode;
      keys: NamedExpr[];
      aggs: AggregateCall[];
      /**
       * Set for a window aggregation: the input is a windowTvf (absorbed here) and the keys include its
       * window_start and window_end, which come from the window as it fires, not from the rows.
       */
      window?: WindowDef;
      fields: Field[];
      /** Where the query that groups starts, for refusals after binding. */
      at: number;
    }
  | { kind: 'union'; inputs: LogicalNode[]; fields: Field[] }
  /**
   * ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...): each row numbered within its partition, in
   * `rankField`. With `limit` (an outer WHERE rownum <= N) it is a Top-N; the engine runs it per
   * window (window Top-N), as the partition includes the window of the aggregation below.
   */
  /**
   * Aggregates over each row's window of its partition: the rows before it in event time (ORDER BY
   * the event-time column), back `preceding` rows (ROWS) or milliseconds (RANGE; its peers at the
   * same time included), or from the first (null). Each row goes on with the aggregates' values.
   */
  | {
      kind: 'over';
      input: LogicalNode;
      partitionBy: Expr[];
      orderField: string;
      frame: { unit: 'ROWS' | 'RANGE'; preceding: number | null };
      aggs: AggregateCall[];
      fields: Field[];
      at: number;
    }
  | {
      kind: 'rank';
      input: LogicalNode;
      partitionBy: Expr[];
      orderBy: { expr: Expr; descending: boolean }[];
      rankField: string;
      limit?: number;
      fields: Field[];
      at: number;
    }
  /**
   * An inner join: a row of the left and one of the right whose keys are equal and for which the rest
   * of the condition holds. Its rows are the left's fields then the right's (renamed where a name is
   * taken: `fieldMap` says which side and field each comes from).
   */
  | {
      kind: 'join';
      left: LogicalNode;
      right: LogicalNode;
      /** Equal pairs: leftKeys[i] (over the left's fields) = rightKeys[i] (over the right's). */
      leftKeys: Expr[];
      rightKeys: Expr[];
      /** The rest of the ON condition, over the joined row's fields. */
      condition?: Expr;
      /**
       * Set when both sides are aggregations in this same event-time window and the keys equate their
       * window_start and window_end: a window join, whose state is dropped as each window closes.
       */
      window?: WindowDef;
      /**
       * Set when the condition bounds the right row's timestamp to the left's: an interval join
       * (lowerMs <= right.ts - left.ts <= upperMs), whose state is dropped as the watermark passes.
       */
      interval?: { lowerMs: number; upperMs: number };
      fieldMap: { name: string; side: 'left' | 'right'; from: string }[];
      fields: Field[];
      at: number;
    };

export type JoinNode = Extract<LogicalNode, { kind: 'join' }>;
export type RankNode = Extract<LogicalNode, { kind: 'rank' }>;
export type OverNode = Extract<LogicalNode, { kind: 'over' }>;

export type AggregateNode = Extract<LogicalNode, { kind: 'aggregate' }>;

/** The inputs of a node, in order. */
export function inputsOf(n: LogicalNode): LogicalNode[] {
  switch (n.kind) {
    case 'scan':
      return [];
    case 'union':
      return n.inputs;
    case 'join':
      return [n.left, n.right];
    default:
      return [n.input];
  }
}

/** The window a node's rows were aggregated in, and the fields that hold its start and end. */
export function windowBounds(n: LogicalNode): { window: WindowDef; start: string; end: string } | undefined {
  const ref = (e: Expr): string | undefined => (e.kind === 'column' ? e.name.parts[0] : undefined);
  switch (n.kind) {
    case 'aggregate': {
      const start = n.keys.find((k) => ref(k.expr) === (n.window?.cascade?.start ?? 'window_start'))?.name;
      const end = n.keys.find((k) => ref(k.expr) === (n.window?.cascade?.end ?? 'window_end'))?.name;
      return n.window && start && end && n.fields.some((f) => f.name === start) && n.fields.some((f) => f.name === end)
        ? { window: n.window, start, end }
        : undefined;
    }
    case 'filter':
    case 'rank':
    case 'over':
      return windowBounds(n.input);
    case 'project': {
      const inner = windowBounds(n.input);
      const start = inner && n.exprs.find((e) => ref(e.expr) === inner.start)?.name;
      const end = inner && n.exprs.find((e) => ref(e.expr) === inner.end)?.name;
      return inner && start && end ? { window: inner.window, start, end } : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * How field `name` of a node's rows relates to the rows' timestamps: the field is the timestamp plus
 * the offset (an event-time column: 0; a window aggregation's window_end: 1, as its rows carry end - 1).
 * Undefined when the field does not follow the timestamp.
 */
export function timestampOffset(n: LogicalNode, name: string): number | undefined {
  const ref = (e: Expr | undefined): string | undefined => (e?.kind === 'column' ? e.name.parts[0] : undefined);
  switch (n.kind) {
    case 'scan': {
      if (!n.watermark) return undefined;
      const expr = n.project
        ? n.project.find((p) => p.name === name)?.expr
        : n.columns.some((c) => c.name === name)
          ? ({ kind: 'column', name: { kind: 'name', parts: [name], at: 0 }, at: 0 } as Expr)
          : undefined;
      const time = n.computed[n.watermark.column];
      const same =
        ref(expr) === n.watermark.column ||
        (time !== undefined && expr !== undefined && JSON.stringify(expr, dropAt) === JSON.stringify(time, dropAt));
      return same ? 0 : undefined;
    }
    case 'filter':
    case 'rank':
    case 'over':
      return timestampOffset(n.input, name);
    case 'project': {
      const inner = ref(n.exprs.find((e) => e.name === name)?.expr);
      return inner === undefined ? undefined : timestampOffset(n.input, inner);
    }
    case 'aggregate': {
      if (!n.window || n.window.time !== 'event') return undefined;
      const key = ref(n.keys.find((k) => k.name === name)?.expr);
      const end = n.window.cascade?.end ?? 'window_end';
      const start = n.window.cascade?.start ?? 'window_start';
      if (key === end) return 1;
      if (key === 'window_time') return 0;
      if (key === start && n.window.kind !== 'SESSION') return 1 - n.window.sizeMs!;
      return undefined;
    }
    default:
      return undefined;
  }
}

const dropAt = (k: string, v: unknown): unknown => (k === 'at' ? undefined : v);

/**
 * Whether a node's rows are updates (each row carries `$op`: +I, -U, +U or -D, as Flink's changelog
 * rows do) rather than appends: a GROUP BY without a window, and what reads one.
 */
export function isUpdating(n: LogicalNode): boolean {
  if (n.kind === 'aggregate' && !n.window) return true;
  return inputsOf(n).some(isUpdating);
}
