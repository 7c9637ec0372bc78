/**
 * A SQL job: a script of CREATE statements and one INSERT INTO or SELECT, planned into a job by every
 * process that loads it. The job module the surfaces ship is two lines that call `sqlJob` with the
 * script (module.ts), so a SQL job travels, caches and restarts exactly like a TypeScript one.
 */
import { defineJob, type JobDefinition, type JobEnvironment, type JobInfo } from '../sdk/index.js';
import { buildJob } from '../sdk/index.js';
import type { Query, Statement } from './ast.js';
import { Binder } from './binder.js';
import type { CatalogObject } from './catalog.js';
import { SqlError } from './errors.js';
import { explainText } from './explain.js';
import { inputsOf, isUpdating, timestampOffset, windowBounds, type LogicalNode } from './logical.js';
import { optimize } from './optimizer.js';
import { parseSql } from './parser.js';
import { planToStreams, type SqlSink } from './physical.js';
import { printStatement } from './printer.js';
import { connectorOptions, isCsv } from './connector-options.js';
import { bindTable } from './scan.js';
import { comparable, typeName } from './types.js';

export const COLLECT_NAME = 'result';
/** The sinks that take updating rows (each row with its `$op`). */
const UPDATE_SINKS = new Set(['print', 'blackhole']);

export interface PlannedQuery {
  plan: LogicalNode;
  sink: SqlSink;
}

type Lookup = (name: string) => CatalogObject | undefined;
type Dml = Extract<Statement, { kind: 'insert' }> | Query;

/** `${name}` or `${name:default}` in an option value: the job's --param of that name. */
function withParams(
  options: Record<string, string>,
  params: Readonly<Record<string, string>>,
  at: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(options)) {
    out[k] = v.replace(/\$\{([A-Za-z0-9_.-]+)(?::([^}]*))?\}/g, (_, name: string, fallback?: string) => {
      const got = params[name] ?? fallback;
      if (got === undefined)
        throw new SqlError(`option '${k}' = '${v}' needs --param ${name}=... (or a default: \${${name}:value})`, at);
      return got;
    });
  }
  return out;
}

/**
 * What the optimized plan asks of the engine that it cannot do yet, refused at the query's own text
 * (the physical planner would only know the generated script's).
 */
function checkPlannable(n: LogicalNode): void {
  if (n.kind === 'join' && n.leftKeys.length === 0)
    throw new SqlError(
      'a join needs an equality between the two sides (ON a.k = b.k); a join without one (a cross join) is not supported',
      n.at,
    );
  if (n.kind !== 'aggregate' || n.window) {
    const updating = inputsOf(n).find(isUpdating);
    if (updating && n.kind !== 'filter' && n.kind !== 'project' && n.kind !== 'union') {
      const what =
        n.kind === 'join'
          ? 'a join'
          : n.kind === 'aggregate'
            ? 'a window aggregation'
            : n.kind === 'rank'
              ? 'a Top-N'
              : n.kind === 'over'
                ? 'an OVER aggregation'
                : 'a windowing TVF';
      throw new SqlError(
        `${what} over the results of a GROUP BY without a window (updates) is not supported yet; group in windows, or aggregate the updates with another GROUP BY`,
        'at' in n ? n.at : 0,
      );
    }
  }
  if (n.kind === 'over' && timestampOffset(n.input, n.orderField) !== 0) {
    throw new SqlError(
      `OVER (... ORDER BY ${n.orderField}): an OVER aggregation is ordered by the event-time column (the one with WATERMARK FOR)`,
      n.at,
    );
  }
  if (n.kind === 'rank') {
    if (n.limit === undefined)
      throw new SqlError(
        'ROW_NUMBER() OVER (...) needs an outer WHERE rownum <= N (a Top-N); a numbering of every row is not supported yet',
        n.at,
      );
    const w = windowBounds(n.input);
    const partitioned = (field: string): boolean =>
      n.partitionBy.some((e) => e.kind === 'column' && e.name.parts[0] === field);
    if (!w || w.window.time !== 'event' || !partitioned(w.start) || !partitioned(w.end)) {
      throw new SqlError(
        'a Top-N is supported per window: ROW_NUMBER() OVER (PARTITION BY window_start, window_end ...) over an event-time window aggregation',
        n.at,
      );
    }
  }
  if (n.kind === 'windowTvf') {
    if (n.window.kind === 'SESSION')
      throw new SqlError(
        'SESSION(...) rows are known only when a session closes: aggregate them with GROUP BY window_start, window_end',
        n.at,
      );
    if (n.window.time === 'processing')
      throw new SqlError(
        `${n.window.kind}(...) on processing time must be aggregated: GROUP BY window_start, window_end`,
        n.at,
      );
  }
  // A window aggregation's windowTvf is absorbed (it is planned as the window, not as rows).
  const inputs = n.kind === 'aggregate' && n.window && n.input.kind === 'windowTvf' ? [n.input.input] : inputsOf(n);
  inputs.forEach(checkPlannable);
}

/** Binds and optimizes one INSERT INTO or SELECT against the catalog. */
export function planQuery(s: Dml, lookup: Lookup, params: Readonly<Record<string, string>> = {}): PlannedQuery {
  const binder = new Binder((name) => {
    const o = lookup(name);
    if (o?.statement.kind !== 'createTable') return o;
    const statement = o.statement;
    const at = statement.at;
    const options = Object.fromEntries(statement.options.map((x) => [x.key, x.value]));
    const resolved = withParams(options, params, at);
    return {
      ...o,
      statement: { ...statement, options: Object.entries(resolved).map(([key, value]) => ({ key, value })) },
    };
  });
  if (s.kind === 'query') {
    const plan = optimize(binder.query(s));
    checkPlannable(plan);
    return { plan, sink: { kind: 'collect', name: COLLECT_NAME } };
  }
  const name = s.table.parts.join('.');
  const target = lookup(name);
  if (!target) throw new SqlError(`INSERT INTO ${name}: no such table (SHOW TABLES lists them)`, s.table.at);
  if (target.statement.kind !== 'createTable')
    throw new SqlError(`INSERT INTO ${name}: ${name} is a view; insert into a table`, s.table.at);
  const table = bindTable(target.statement);
  const columns = table.columns.filter((c) => table.computed[c.name] === undefined);
  const plan = optimize(binder.query(s.query));
  checkPlannable(plan);
  if (plan.fields.length !== columns.length) {
    throw new SqlError(
      `INSERT INTO ${name}: the query gives ${plan.fields.length} columns (${plan.fields.map((f) => f.name).join(', ')}); the table has ${columns.length} (${columns.map((c) => c.name).join(', ')})`,
      s.query.at,
    );
  }
  plan.fields.forEach((f, i) => {
    const c = columns[i]!;
    if (!comparable(f.type, c.type))
      throw new SqlError(
        `INSERT INTO ${name}: column ${i + 1} of the query (${f.name}) is ${typeName(f.type)}; the table's ${c.name} is ${typeName(c.type)} (CAST it)`,
        s.query.at,
      );
  });
  // The table's column names are what its sink writes.
  const renamed: LogicalNode = plan.fields.every((f, i) => f.name === columns[i]!.name)
    ? plan
    : optimize({
        kind: 'project',
        input: plan,
        exprs: plan.fields.map((f, i) => ({
          name: columns[i]!.name,
          expr: { kind: 'column', name: { kind: 'name', parts: [f.name], at: 0 }, at: 0 },
        })),
        fields: plan.fields.map((f, i) => ({ name: columns[i]!.name, type: f.type })),
      });
  const upsert =
    isUpdating(renamed) && !UPDATE_SINKS.has(table.connector)
      ? upsertInto(name, table.connector, target.statement.primaryKey, renamed, s.table.at)
      : undefined;
  const options = withParams(table.options, params, target.statement.at);
  const sinkOptions = {
    ...connectorOptions(table.connector, options, columns, target.statement.at, 'sink'),
    ...(upsert ? { mode: 'upsert', primaryKey: upsert } : {}),
  };
  const csv = isCsv(table.connector, options)
    ? { csv: { columns, delimiter: options['csv.field-delimiter'] ?? ',' } }
    : {};
  return {
    plan: renamed,
    sink: { kind: 'table', table: name, connector: table.connector, options: sinkOptions, ...csv },
  };
}

/**
 * Updates into a table that takes them as upserts by its primary key (PostgreSQL): the key must be the
 * one the updates are keyed by (the GROUP BY's columns), and no row may ever need deleting (a GROUP BY
 * over updates can empty a group). Returns the key's columns.
 */
function upsertInto(
  name: string,
  connector: string,
  primaryKey: string[] | undefined,
  plan: LogicalNode,
  at: number,
): string[] {
  const why = (what: string): never => {
    throw new SqlError(
      `INSERT INTO ${name}: the query's results are updates (a GROUP BY without a window); ${what}`,
      at,
    );
  };
  if (connector !== 'postgres')
    why(
      `connector '${connector}' takes only appended rows; group in windows (TUMBLE, HOP, SESSION), or write to ${[...UPDATE_SINKS].join(', ')} or a postgres table with a PRIMARY KEY`,
    );
  if (!primaryKey)
    why(
      `a postgres table takes them as upserts by its key: declare PRIMARY KEY (...) NOT ENFORCED on the GROUP BY's columns`,
    );
  const key = upsertKeyOf(plan);
  if (!key || key.length !== primaryKey!.length || !key.every((k) => primaryKey!.includes(k)))
    why(
      `the table's PRIMARY KEY (${primaryKey!.join(', ')}) must be the columns the results are grouped by (${key?.join(', ') ?? 'none that reach the table'})`,
    );
  if (mayDelete(plan))
    why('a GROUP BY over updates can empty a group, and a row the sink would have to delete; group the rows directly');
  return primaryKey!;
}

/** The columns that identify an updating plan's rows (the GROUP BY's, as the plan names them), if they reach its output. */
function upsertKeyOf(n: LogicalNode): string[] | undefined {
  if (n.kind === 'aggregate' && !n.window) return n.keys.map((k) => k.name);
  if (n.kind === 'filter') return upsertKeyOf(n.input);
  if (n.kind !== 'project') return undefined;
  const inner = upsertKeyOf(n.input);
  const out = inner?.map((k) => n.exprs.find((e) => e.expr.kind === 'column' && e.expr.name.parts[0] === k)?.name);
  return out?.every((k) => k !== undefined) ? (out as string[]) : undefined;
}

/** Whether an updating plan can retract a row for good (-D): an aggregation over updates. */
function mayDelete(n: LogicalNode): boolean {
  if (n.kind === 'aggregate' && !n.window && isUpdating(n.input)) return true;
  return inputsOf(n).some(mayDelete);
}

/** The catalog a script's own CREATE statements make (they were checked when the script was compiled). */
function scriptCatalog(statements: Statement[]): Map<string, CatalogObject> {
  const objects = new Map<string, CatalogObject>();
  for (const s of statements) {
    if (s.kind !== 'createTable' && s.kind !== 'createView') continue;
    const name = s.name.parts.join('.');
    objects.set(name, {
      name,
      kind: s.kind === 'createTable' ? 'table' : 'view',
      temporary: s.temporary,
      sql: printStatement(s),
      statement: s,
    });
  }
  return objects;
}

/** The queries of a script (one INSERT INTO or SELECT, or a statement set's inserts), after its CREATE statements. */
function scriptQueries(statements: Statement[], text: string): Dml[] {
  const dml = statements.filter((s) => s.kind === 'insert' || s.kind === 'query' || s.kind === 'statementSet');
  if (dml.length !== 1)
    throw new SqlError(
      `a SQL job is CREATE statements and one INSERT INTO, SELECT or EXECUTE STATEMENT SET; this script has ${dml.length}`,
      0,
      text,
    );
  const only = dml[0]!;
  return only.kind === 'statementSet' ? only.inserts : [only as Dml];
}

/** Plans a script's queries into the job's environment. */
/** The operator ids of a SQL job: the plan's, by the planner's order (design record 015). */
const SQL_ID_PREFIX = 'sql_';

export function buildSqlScript(env: JobEnvironment, script: string): PlannedQuery[] {
  try {
    const statements = parseSql(script);
    const catalog = scriptCatalog(statements);
    const planned = scriptQueries(statements, script).map((q) => planQuery(q, (n) => catalog.get(n), env.params));
    env.mintIdsWith(SQL_ID_PREFIX);
    planToStreams(env, planned);
    return planned;
  } catch (err) {
    throw err instanceof SqlError ? err.withText(script) : err;
  }
}

/** The job a SQL script is: what a SQL job module exports. */
export function sqlJobDefinition(info: JobInfo, script: string): JobDefinition {
  return defineJob(info, (env) => void buildSqlScript(env, script));
}

/** EXPLAIN of a script's query: its plan and the job graph it makes. */
export function explainScript(
  script: string,
  info: JobInfo,
  options: { parallelism?: number; params?: Record<string, string> } = {},
): string {
  let planned: PlannedQuery[] = [];
  const job = defineJob(info, (env) => {
    planned = buildSqlScript(env, script);
  });
  const { spec } = buildJob(job, options);
  return explainText(planned, spec);
}
