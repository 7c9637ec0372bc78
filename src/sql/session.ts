/**
 * A SQL session: statements run against a session catalog, one after another, as `clink sql` and the
 * coordinator's POST /api/v1/jobs/sql run them. Catalog statements answer at once; EXPLAIN answers with
 * the plan; INSERT INTO, SELECT and EXECUTE STATEMENT SET compile to a job module (module.ts) that the
 * caller runs locally or submits. SET and RESET change the caller's settings (Flink's keys, as
 * 'execution.checkpointing.timeout'), which every job compiled after them carries. Errors are SqlErrors
 * placed in the text they came from.
 */
import { createHash } from 'node:crypto';
import type { Statement } from './ast.js';
import { isCatalogStatement, type SqlCatalog } from './catalog.js';
import { SqlError } from './errors.js';
import { COLLECT_NAME, explainScript, planQuery } from './sql-job.js';
import { parseSql } from './parser.js';
import { printStatement } from './printer.js';
import { declaredTypeName } from './types.js';

export type SqlMode = 'explain' | 'compile' | 'submit';

export interface CompiledSqlJob {
  name: string;
  /** The self-contained script every process plans: the catalog's CREATE statements and the query. */
  script: string;
  /** The job module: `export default await sqlJob(info, script)`. */
  moduleSource: string;
  explain: string;
  /** For a SELECT, the collect name its rows arrive under; absent for INSERT INTO. */
  collect?: string;
  columns: string[];
  /** The columns' types, as a sink table's DDL would declare them. */
  columnTypes: string[];
}

export type SqlResult =
  | { kind: 'message'; statement: string; message: string; rows?: Record<string, unknown>[] }
  | { kind: 'explain'; statement: string; plan: string }
  | { kind: 'job'; statement: string; job: CompiledSqlJob; settings: Record<string, string> };

export interface SqlRunOptions {
  /** The job's name [default: from the statement]. */
  name?: string;
  parallelism?: number;
  params?: Record<string, string>;
  /** explain: jobs are explained, not compiled. @default 'compile' */
  mode?: SqlMode;
  /** What SET and RESET change: the caller's (a shell keeps one for its session). @default a new one per call */
  settings?: Map<string, string>;
  /** Checks a SET's key and value, throwing an Error that says what is wrong. @default every key is taken */
  checkSetting?: (key: string, value: string) => void;
}

type Dml = Extract<Statement, { kind: 'insert' | 'query' | 'statementSet' }>;

const isDml = (s: Statement): s is Dml => s.kind === 'insert' || s.kind === 'query' || s.kind === 'statementSet';

export class SqlSession {
  constructor(readonly catalog: SqlCatalog) {}

  /** Runs every statement of `text` in order; the first that fails stops the rest (what ran, stays). */
  async execute(text: string, o: SqlRunOptions = {}): Promise<SqlResult[]> {
    let statements: Statement[];
    try {
      statements = parseSql(text);
    } catch (err) {
      throw tooDeep(err, 0, text);
    }
    if (statements.length === 0) throw new SqlError('no statement: the text is empty', 0, text);
    const results: SqlResult[] = [];
    const settings = o.settings ?? new Map<string, string>();
    for (const s of statements) {
      const shown = printStatement(s);
      try {
        if (isCatalogStatement(s))
          results.push({ kind: 'message', statement: shown, ...(await this.catalog.execute(s)) });
        else if (s.kind === 'set' || s.kind === 'reset')
          results.push({ kind: 'message', statement: shown, ...this.set(s, settings, o.checkSetting) });
        else if (s.kind === 'explain') {
          if (!isDml(s.statement))
            throw new SqlError('EXPLAIN takes a SELECT, INSERT INTO or EXECUTE STATEMENT SET', s.at);
          results.push({ kind: 'explain', statement: shown, plan: this.compile(s.statement, o).explain });
        } else {
          const job = this.compile(s, o);
          results.push(
            o.mode === 'explain'
              ? { kind: 'explain', statement: shown, plan: job.explain }
              : { kind: 'job', statement: shown, job, settings: Object.fromEntries(settings) },
          );
        }
      } catch (err) {
        throw err instanceof SqlError ? err.withText(text) : tooDeep(err, s.at, text);
      }
    }
    return results;
  }

  private set(
    s: Extract<Statement, { kind: 'set' | 'reset' }>,
    settings: Map<string, string>,
    check: SqlRunOptions['checkSetting'],
  ): { message: string; rows?: Record<string, unknown>[] } {
    if (s.kind === 'reset') {
      if (s.key === undefined) settings.clear();
      else settings.delete(s.key);
      return { message: s.key === undefined ? 'every setting is reset' : `'${s.key}' is reset` };
    }
    if (s.key === undefined)
      return {
        message: `${settings.size} setting${settings.size === 1 ? '' : 's'}`,
        rows: [...settings].map(([key, value]) => ({ key, value })),
      };
    try {
      check?.(s.key, s.value!);
    } catch (err) {
      throw new SqlError((err as Error).message, s.at);
    }
    settings.set(s.key, s.value!);
    return { message: `'${s.key}' is set to '${s.value!}'` };
  }

  /** A query (or statement set) checked against the catalog, then made into a job. */
  compile(s: Dml, o: SqlRunOptions = {}): CompiledSqlJob {
    const inserts = s.kind === 'statementSet' ? s.inserts : [s];
    if (inserts.length === 0) throw new SqlError('EXECUTE STATEMENT SET needs at least one INSERT INTO', s.at);
    // Bound here first, so an error points into the text as the user wrote it.
    const planned = inserts.map((q) => planQuery(q, (n) => this.catalog.get(n), o.params ?? {}));
    const script = [...this.catalog.list().map((c) => `${c.sql};`), `${printStatement(s)};`].join('\n');
    const name = o.name ?? defaultName(s, script);
    if (!/^[A-Za-z0-9_.-]+$/.test(name))
      throw new SqlError(`job name '${name}': use letters, digits, '_', '.' or '-'`, s.at);
    const info = { name, version: '1', description: truncate(printStatement(s), 200) };
    const explain = explainScript(script, info, {
      ...(o.parallelism ? { parallelism: o.parallelism } : {}),
      params: o.params ?? {},
    });
    const moduleSource = `// A clink SQL job, made by clink sql.\nimport { sqlJob } from 'clink';\nexport default await sqlJob(${JSON.stringify(info)}, ${JSON.stringify(script)});\n`;
    const first = planned[0]!;
    return {
      name,
      script,
      moduleSource,
      explain,
      columns: first.plan.fields.map((f) => f.name),
      columnTypes: first.plan.fields.map((f) => declaredTypeName(f.type)),
      ...(s.kind === 'query' ? { collect: COLLECT_NAME } : {}),
    };
  }
}

/** A statement nested past what the planner's recursion can hold is refused as such, not as a crash. */
export function tooDeep(err: unknown, at: number, text: string): unknown {
  if (!(err instanceof RangeError) || !/call stack/.test(err.message)) return err;
  return SqlError.tooDeep(at, text);
}

function defaultName(s: Dml, script: string): string {
  const hash = createHash('sha256').update(script).digest('hex').slice(0, 8);
  if (s.kind === 'insert') return `sql-insert-${s.table.parts.join('.').replace(/[^A-Za-z0-9_.-]/g, '_')}-${hash}`;
  return `sql-${s.kind === 'statementSet' ? 'statement-set' : 'select'}-${hash}`;
}

const truncate = (s: string, n: number): string => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);
