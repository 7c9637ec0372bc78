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
  /** SESSION's PARTITION BY columns, when given. */
  partitionBy?: string[];
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
      fieldMap: { name: string; side: 'left' | 'right'; from: string }[];
      fields: Field[];
      at: number;
    };

export type JoinNode = Extract<LogicalNode, { kind: 'join' }>;

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
