/**
 * The SQL syntax tree: plain objects, each node with `at`, the 0-based UTF-16 offset of its first
 * character in the statement text (errors convert it to a 1-based byte offset). Names keep the case
 * they were written in and compare exactly, as in Flink SQL; keywords are case-insensitive.
 */

export interface Name {
  kind: 'name';
  /** The parts of a dotted name: `t.col` is ['t', 'col']. */
  parts: string[];
  at: number;
}

export type DataType =
  | { kind: 'type'; name: 'INT' | 'BIGINT' | 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'DATE'; at: number }
  | { kind: 'type'; name: 'VARCHAR'; length?: number; at: number }
  | { kind: 'type'; name: 'DECIMAL'; precision?: number; scale?: number; at: number }
  | { kind: 'type'; name: 'TIMESTAMP' | 'TIMESTAMP_LTZ'; precision?: number; at: number }
  | { kind: 'type'; name: 'ARRAY'; element: DataType; at: number }
  | { kind: 'type'; name: 'MAP'; key: DataType; value: DataType; at: number }
  | { kind: 'type'; name: 'ROW'; fields: { name: string; type: DataType }[]; at: number };

export type IntervalUnit = 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'MONTH' | 'YEAR';

export type Expr =
  | { kind: 'column'; name: Name; at: number }
  | { kind: 'number'; text: string; at: number }
  | { kind: 'string'; value: string; at: number }
  | { kind: 'boolean'; value: boolean; at: number }
  | { kind: 'null'; at: number }
  | { kind: 'interval'; value: string; unit: IntervalUnit; at: number }
  | { kind: 'timestamp'; value: string; at: number }
  | { kind: 'star'; table?: string; at: number }
  | { kind: 'unary'; op: '-' | '+' | 'NOT'; operand: Expr; at: number }
  | { kind: 'binary'; op: BinaryOp; left: Expr; right: Expr; at: number }
  | { kind: 'isNull'; operand: Expr; negated: boolean; at: number }
  | { kind: 'between'; operand: Expr; low: Expr; high: Expr; negated: boolean; at: number }
  | { kind: 'in'; operand: Expr; list: Expr[]; negated: boolean; at: number }
  | { kind: 'like'; operand: Expr; pattern: Expr; negated: boolean; at: number }
  | { kind: 'cast'; operand: Expr; type: DataType; at: number }
  | { kind: 'case'; operand?: Expr; whens: { when: Expr; then: Expr }[]; otherwise?: Expr; at: number }
  | { kind: 'call'; name: string; args: Expr[]; distinct: boolean; over?: WindowSpec; at: number };

export type BinaryOp = 'OR' | 'AND' | '=' | '<>' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%' | '||';

export interface WindowSpec {
  partitionBy: Expr[];
  orderBy: OrderItem[];
  frame?: { unit: 'ROWS' | 'RANGE'; start: FrameBound; end?: FrameBound };
}

export type FrameBound =
  | { kind: 'unboundedPreceding' }
  | { kind: 'currentRow' }
  | { kind: 'preceding'; offset: Expr }
  | { kind: 'following'; offset: Expr };

export interface OrderItem {
  expr: Expr;
  descending: boolean;
}

export interface SelectItem {
  expr: Expr;
  alias?: string;
}

export type TableRef =
  | { kind: 'table'; name: Name; alias?: string; at: number }
  | { kind: 'subquery'; query: Query; alias?: string; at: number }
  | { kind: 'tvf'; name: string; args: TvfArg[]; alias?: string; at: number }
  | {
      kind: 'join';
      type: 'INNER' | 'LEFT' | 'RIGHT' | 'FULL' | 'CROSS';
      left: TableRef;
      right: TableRef;
      on?: Expr;
      at: number;
    };

/** An argument of a windowing table function: `TABLE t`, `DESCRIPTOR(col)`, or an expression. */
export type TvfArg =
  | { kind: 'tableArg'; name: Name; at: number }
  | { kind: 'descriptor'; columns: string[]; at: number }
  | { kind: 'exprArg'; expr: Expr; at: number };

export interface Select {
  kind: 'select';
  distinct: boolean;
  items: SelectItem[];
  from?: TableRef;
  where?: Expr;
  groupBy: Expr[];
  having?: Expr;
  at: number;
}

export interface Query {
  kind: 'query';
  body: Select | { kind: 'union'; all: boolean; left: Query; right: Query; at: number };
  orderBy: OrderItem[];
  limit?: number;
  at: number;
}

export interface ColumnDef {
  name: string;
  type?: DataType;
  /** A computed column: `name AS expr`. */
  computed?: Expr;
  notNull: boolean;
  at: number;
}

export type Statement =
  | {
      kind: 'createTable';
      name: Name;
      ifNotExists: boolean;
      temporary: boolean;
      columns: ColumnDef[];
      watermark?: { column: string; expr: Expr; at: number };
      primaryKey?: string[];
      options: { key: string; value: string }[];
      at: number;
    }
  | { kind: 'createView'; name: Name; temporary: boolean; ifNotExists: boolean; query: Query; at: number }
  | { kind: 'drop'; object: 'TABLE' | 'VIEW'; name: Name; ifExists: boolean; temporary: boolean; at: number }
  | { kind: 'alterTableRename'; name: Name; to: Name; at: number }
  | { kind: 'showTables'; at: number }
  | { kind: 'describe'; name: Name; at: number }
  | { kind: 'explain'; statement: Statement; at: number }
  | { kind: 'insert'; table: Name; query: Query; at: number }
  | { kind: 'statementSet'; inserts: Extract<Statement, { kind: 'insert' }>[]; at: number }
  /** SET 'key' = 'value' (key absent: list what is set); RESET 'key' (absent: all). */
  | { kind: 'set'; key?: string; value?: string; at: number }
  | { kind: 'reset'; key?: string; at: number }
  | Query;
