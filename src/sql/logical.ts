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
  | { kind: 'windowTvf'; input: LogicalNode; window: WindowDef; fields: Field[] }
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
    }
  | { kind: 'union'; inputs: LogicalNode[]; fields: Field[] };

export type AggregateNode = Extract<LogicalNode, { kind: 'aggregate' }>;

/** The inputs of a node, in order. */
export function inputsOf(n: LogicalNode): LogicalNode[] {
  switch (n.kind) {
    case 'scan':
      return [];
    case 'union':
      return n.inputs;
    default:
      return [n.input];
  }
}
