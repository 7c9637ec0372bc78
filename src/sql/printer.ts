/**
 * The syntax tree back to SQL text: one canonical spelling (keywords upper case, every binary
 * expression parenthesised, names back-quoted when they need it), so that parsing the printed text
 * gives the same tree. EXPLAIN output and error excerpts use it too.
 */
import type {
  DataType,
  Expr,
  FrameBound,
  Name,
  OrderItem,
  Query,
  Select,
  Statement,
  TableRef,
  TvfArg,
  WindowSpec,
} from './ast.js';

const BARE = /^[A-Za-z_][A-Za-z0-9_$]*$/;
/** Words the parser reads as keywords wherever they stand: such a name must be quoted. */
const RESERVED = new Set(
  'SELECT DISTINCT FROM WHERE GROUP BY HAVING ORDER LIMIT ASC DESC AS AND OR NOT IS NULL TRUE FALSE BETWEEN IN LIKE CASE WHEN THEN ELSE END CAST INTERVAL JOIN INNER LEFT RIGHT FULL OUTER CROSS ON UNION ALL OVER TABLE CREATE IF EXISTS DROP ALTER RENAME TO SHOW DESCRIBE EXPLAIN INSERT INTO EXECUTE FOR PRIMARY WITH'.split(
    ' ',
  ),
);

export function printIdent(name: string): string {
  return BARE.test(name) && !RESERVED.has(name.toUpperCase()) ? name : `\`${name.replaceAll('`', '``')}\``;
}

const str = (s: string): string => `'${s.replaceAll("'", "''")}'`;
const printName = (n: Name): string => n.parts.map(printIdent).join('.');

export function printType(t: DataType): string {
  switch (t.name) {
    case 'VARCHAR':
      return t.length === undefined ? 'VARCHAR' : `VARCHAR(${t.length})`;
    case 'DECIMAL':
      return t.precision === undefined
        ? 'DECIMAL'
        : t.scale === undefined
          ? `DECIMAL(${t.precision})`
          : `DECIMAL(${t.precision}, ${t.scale})`;
    case 'TIMESTAMP':
    case 'TIMESTAMP_LTZ':
      return t.precision === undefined ? t.name : `${t.name}(${t.precision})`;
    case 'ARRAY':
      return `ARRAY<${printType(t.element)}>`;
    case 'MAP':
      return `MAP<${printType(t.key)}, ${printType(t.value)}>`;
    case 'ROW':
      return `ROW<${t.fields.map((f) => `${printIdent(f.name)} ${printType(f.type)}`).join(', ')}>`;
    default:
      return t.name;
  }
}

export function printExpr(e: Expr): string {
  switch (e.kind) {
    case 'column':
      return printName(e.name);
    case 'number':
      return e.text;
    case 'string':
      return str(e.value);
    case 'boolean':
      return e.value ? 'TRUE' : 'FALSE';
    case 'null':
      return 'NULL';
    case 'interval':
      return `INTERVAL ${str(e.value)} ${e.unit}`;
    case 'timestamp':
      return `TIMESTAMP ${str(e.value)}`;
    case 'star':
      return e.table === undefined ? '*' : `${e.table.split('.').map(printIdent).join('.')}.*`;
    case 'unary':
      return e.op === 'NOT' ? `(NOT ${printExpr(e.operand)})` : `(${e.op}${printExpr(e.operand)})`;
    case 'binary':
      return `(${printExpr(e.left)} ${e.op} ${printExpr(e.right)})`;
    case 'isNull':
      return `(${printExpr(e.operand)} IS ${e.negated ? 'NOT ' : ''}NULL)`;
    case 'between':
      return `(${printExpr(e.operand)} ${e.negated ? 'NOT ' : ''}BETWEEN ${printExpr(e.low)} AND ${printExpr(e.high)})`;
    case 'in':
      return `(${printExpr(e.operand)} ${e.negated ? 'NOT ' : ''}IN (${e.list.map(printExpr).join(', ')}))`;
    case 'like':
      return `(${printExpr(e.operand)} ${e.negated ? 'NOT ' : ''}LIKE ${printExpr(e.pattern)})`;
    case 'cast':
      return `CAST(${printExpr(e.operand)} AS ${printType(e.type)})`;
    case 'case':
      return `CASE${e.operand ? ` ${printExpr(e.operand)}` : ''}${e.whens.map((w) => ` WHEN ${printExpr(w.when)} THEN ${printExpr(w.then)}`).join('')}${e.otherwise ? ` ELSE ${printExpr(e.otherwise)}` : ''} END`;
    case 'call':
      return `${e.name.split('.').map(printIdent).join('.')}(${e.distinct ? 'DISTINCT ' : ''}${e.args.map(printExpr).join(', ')})${e.over ? ` OVER ${printWindow(e.over)}` : ''}`;
  }
}

function printOrder(items: OrderItem[]): string {
  return items.map((o) => `${printExpr(o.expr)}${o.descending ? ' DESC' : ''}`).join(', ');
}

function printBound(b: FrameBound): string {
  switch (b.kind) {
    case 'unboundedPreceding':
      return 'UNBOUNDED PRECEDING';
    case 'currentRow':
      return 'CURRENT ROW';
    case 'preceding':
      return `${printExpr(b.offset)} PRECEDING`;
    case 'following':
      return `${printExpr(b.offset)} FOLLOWING`;
  }
}

function printWindow(w: WindowSpec): string {
  const parts: string[] = [];
  if (w.partitionBy.length > 0) parts.push(`PARTITION BY ${w.partitionBy.map(printExpr).join(', ')}`);
  if (w.orderBy.length > 0) parts.push(`ORDER BY ${printOrder(w.orderBy)}`);
  if (w.frame)
    parts.push(
      w.frame.end
        ? `${w.frame.unit} BETWEEN ${printBound(w.frame.start)} AND ${printBound(w.frame.end)}`
        : `${w.frame.unit} ${printBound(w.frame.start)}`,
    );
  return `(${parts.join(' ')})`;
}

const alias = (a: string | undefined): string => (a === undefined ? '' : ` AS ${printIdent(a)}`);

function printTvfArg(a: TvfArg): string {
  if (a.kind === 'tableArg') return `TABLE ${printName(a.name)}`;
  if (a.kind === 'descriptor') return `DESCRIPTOR(${a.columns.map(printIdent).join(', ')})`;
  return printExpr(a.expr);
}

function printTable(t: TableRef): string {
  switch (t.kind) {
    case 'table':
      return `${printName(t.name)}${alias(t.alias)}`;
    case 'subquery':
      return `(${printQuery(t.query)})${alias(t.alias)}`;
    case 'tvf':
      return `TABLE(${t.name}(${t.args.map(printTvfArg).join(', ')}))${alias(t.alias)}`;
    case 'join':
      return t.type === 'CROSS' && !t.on
        ? `${printTable(t.left)}, ${printTable(t.right)}`
        : `${printTable(t.left)} ${t.type} JOIN ${printTable(t.right)}${t.on ? ` ON ${printExpr(t.on)}` : ''}`;
  }
}

function printSelect(s: Select): string {
  let out = `SELECT ${s.distinct ? 'DISTINCT ' : ''}${s.items.map((i) => `${printExpr(i.expr)}${alias(i.alias)}`).join(', ')}`;
  if (s.from) out += ` FROM ${printTable(s.from)}`;
  if (s.where) out += ` WHERE ${printExpr(s.where)}`;
  if (s.groupBy.length > 0) out += ` GROUP BY ${s.groupBy.map(printExpr).join(', ')}`;
  if (s.having) out += ` HAVING ${printExpr(s.having)}`;
  return out;
}

export function printQuery(q: Query): string {
  const body =
    q.body.kind === 'select'
      ? printSelect(q.body)
      : `${printQuery(q.body.left)} UNION ${q.body.all ? 'ALL ' : ''}${printQuery(q.body.right)}`;
  return `${body}${q.orderBy.length > 0 ? ` ORDER BY ${printOrder(q.orderBy)}` : ''}${q.limit !== undefined ? ` LIMIT ${q.limit}` : ''}`;
}

export function printStatement(s: Statement): string {
  switch (s.kind) {
    case 'query':
      return printQuery(s);
    case 'createTable': {
      const elements = s.columns.map(
        (c) =>
          `${printIdent(c.name)} ${c.computed ? `AS ${printExpr(c.computed)}` : `${printType(c.type!)}${c.notNull ? ' NOT NULL' : ''}`}`,
      );
      if (s.watermark)
        elements.push(`WATERMARK FOR ${printIdent(s.watermark.column)} AS ${printExpr(s.watermark.expr)}`);
      if (s.primaryKey) elements.push(`PRIMARY KEY (${s.primaryKey.map(printIdent).join(', ')}) NOT ENFORCED`);
      const options =
        s.options.length > 0 ? ` WITH (${s.options.map((o) => `${str(o.key)} = ${str(o.value)}`).join(', ')})` : '';
      return `CREATE ${s.temporary ? 'TEMPORARY ' : ''}TABLE ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}${printName(s.name)} (${elements.join(', ')})${options}`;
    }
    case 'createView':
      return `CREATE ${s.temporary ? 'TEMPORARY ' : ''}VIEW ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}${printName(s.name)} AS ${printQuery(s.query)}`;
    case 'drop':
      return `DROP ${s.temporary ? 'TEMPORARY ' : ''}${s.object} ${s.ifExists ? 'IF EXISTS ' : ''}${printName(s.name)}`;
    case 'alterTableRename':
      return `ALTER TABLE ${printName(s.name)} RENAME TO ${printName(s.to)}`;
    case 'showTables':
      return 'SHOW TABLES';
    case 'describe':
      return `DESCRIBE ${printName(s.name)}`;
    case 'explain':
      return `EXPLAIN ${printStatement(s.statement)}`;
    case 'insert':
      return `INSERT INTO ${printName(s.table)} ${printQuery(s.query)}`;
    case 'statementSet':
      return `EXECUTE STATEMENT SET BEGIN ${s.inserts.map((i) => `${printStatement(i)}; `).join('')}END`;
    case 'set':
      return s.key === undefined ? 'SET' : `SET ${str(s.key)} = ${str(s.value!)}`;
    case 'reset':
      return s.key === undefined ? 'RESET' : `RESET ${str(s.key)}`;
  }
}
