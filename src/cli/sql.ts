/**
 * `clink sql`: statements from -e, -f or an interactive shell, run in one session. Catalog statements
 * answer at once (tables for SHOW TABLES and DESCRIBE); EXPLAIN prints the plan; a query or INSERT is
 * compiled to a job module and, by --mode: explained, printed (compile: a module `clink submit` takes),
 * or run (submit: on this machine like `clink run`, or on the cluster with --coordinator).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { BUILTIN_CAPABILITIES } from '../connectors/index.js';
import { ClinkError } from '../errors.js';
import { SqlCatalog, SqlError, SqlSession, type CompiledSqlJob, type SqlMode, type SqlResult } from '../sql/index.js';
import { checkpointSettingsOfSets, type CheckpointSettings } from '../client/index.js';
import type { CoordinatorTarget } from './endpoint.js';
import { formatTable } from './table.js';

export interface SqlCommandOptions {
  /** Statement texts, in order: each -e as it is, each -f read from its file. */
  sources: { kind: 'text' | 'file'; value: string }[];
  mode: SqlMode;
  /** Absent: jobs run on this machine (an embedded cluster). */
  coordinator?: CoordinatorTarget;
  catalogDir?: string;
  parallelism?: number;
  params: Record<string, string>;
  name?: string;
  output: 'table' | 'json';
  maxRows: number;
  progress: boolean;
  workers?: number;
  checkpoint?: Partial<CheckpointSettings>;
  /** What the session's SET statements set (the command keeps one for its session). */
  settings?: Map<string, string>;
}

const HISTORY_FILE = '.clink_sql_history';
const HISTORY_LINES = 1000;

/** A SET's key and value are checked as the job's submit will read them. */
const checkSetting = (key: string, value: string): void => void checkpointSettingsOfSets({ [key]: value });

export async function sqlCommand(o: SqlCommandOptions): Promise<void> {
  const session = new SqlSession(await SqlCatalog.open(connectorNames(), o.catalogDir));
  // SET lasts for the session, as in Flink's SQL client.
  o = { ...o, settings: new Map() };
  if (o.sources.length > 0) {
    for (const src of o.sources) {
      const text = src.kind === 'file' ? await readSqlFile(src.value) : src.value;
      await runText(session, text, o);
    }
    return;
  }
  if (!process.stdin.isTTY) {
    await runText(session, await readStdin(), o);
    return;
  }
  await shell(session, o);
}

/** The connectors a table may name: this build's, and `collect` is not one (SELECT results come back by themselves). */
const connectorNames = (): string[] => BUILTIN_CAPABILITIES.map((c) => c.name);

async function readSqlFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new ClinkError('CLINK_ERR_INVALID_ARGUMENT', `cannot read SQL file ${path}: ${(err as Error).message}`);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Runs a text's statements; an SqlError is shown with the line and a caret under where it is. */
async function runText(session: SqlSession, text: string, o: SqlCommandOptions): Promise<void> {
  let results: SqlResult[];
  try {
    results = await session.execute(text, {
      mode: o.mode,
      ...(o.parallelism ? { parallelism: o.parallelism } : {}),
      params: o.params,
      ...(o.name ? { name: o.name } : {}),
      ...(o.settings ? { settings: o.settings } : {}),
      checkSetting,
    });
  } catch (err) {
    if (err instanceof SqlError && err.text !== undefined)
      throw new ClinkError('CLINK_ERR_PLAN', `${err.message}\n${err.excerpt()}`);
    throw err;
  }
  for (const r of results) await show(r, o);
}

async function show(r: SqlResult, o: SqlCommandOptions): Promise<void> {
  if (r.kind === 'message') {
    // Under --mode compile standard output is the job module alone (`> job.ts`): the rest goes to stderr.
    if (o.mode === 'compile') process.stderr.write(`${r.message}\n`);
    else if (o.output === 'json')
      process.stdout.write(JSON.stringify({ message: r.message, ...(r.rows ? { rows: r.rows } : {}) }) + '\n');
    else process.stdout.write(`${r.message}\n${r.rows && r.rows.length > 0 ? formatTable(r.rows, 0) + '\n' : ''}`);
    return;
  }
  if (r.kind === 'explain') {
    process.stdout.write(o.output === 'json' ? JSON.stringify({ plan: r.plan }) + '\n' : `${r.plan}\n`);
    return;
  }
  if (o.mode === 'compile') {
    process.stdout.write(r.job.moduleSource);
    return;
  }
  await runJob(r.job, { ...o, checkpoint: { ...o.checkpoint, ...checkpointSettingsOfSets(r.settings) } });
}

/** A compiled job run as a module file: on this machine (clink run's path) or submitted (clink submit's). */
async function runJob(job: CompiledSqlJob, o: SqlCommandOptions): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'clink-sql-'));
  const file = join(dir, `${job.name}.js`);
  try {
    await writeFile(file, job.moduleSource);
    const common = {
      ...(o.parallelism ? { parallelism: o.parallelism } : {}),
      params: o.params,
      output: o.output,
      maxRows: o.maxRows,
      progress: o.progress,
      typecheck: false,
      ...(o.checkpoint ? { checkpoint: o.checkpoint } : {}),
    };
    if (o.coordinator) {
      const { submitCommand } = await import('./client.js');
      await submitCommand(file, { ...common, coordinator: o.coordinator, wait: job.collect !== undefined });
    } else {
      const { runCommand } = await import('./run.js');
      await runCommand(file, { ...common, ...(o.workers !== undefined ? { workers: o.workers } : {}) });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The interactive shell: statements end at ';', history is kept in ~/.clink_sql_history, Ctrl-C cancels, QUIT; or Ctrl-D leaves. */
async function shell(session: SqlSession, o: SqlCommandOptions): Promise<void> {
  const historyPath = join(homedir(), HISTORY_FILE);
  const history = (await readFile(historyPath, 'utf8').catch(() => '')).split('\n').filter(Boolean).reverse();
  const rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    prompt: 'clink> ',
    history,
    historySize: HISTORY_LINES,
    removeHistoryDuplicates: true,
  });
  process.stdout.write(
    "clink SQL shell: statements end with ';'. HELP; lists what is supported; QUIT; or Ctrl-D leaves.\n",
  );
  let pending = '';
  let running = false;
  // Ctrl-C (read as a key: the terminal is raw) cancels the running query, or drops the statement
  // being typed; only Ctrl-D leaves.
  rl.on('SIGINT', () => {
    if (running) {
      process.kill(process.pid, 'SIGINT');
      return;
    }
    pending = '';
    rl.write(null, { ctrl: true, name: 'u' }); // what was typed on this line goes too
    process.stdout.write('^C\n');
    rl.setPrompt('clink> ');
    rl.prompt();
  });
  rl.prompt();
  for await (const line of rl) {
    pending += (pending ? '\n' : '') + line;
    const word = pending.trim().toUpperCase();
    if (word === 'QUIT;' || word === 'EXIT;') break; // as in Flink's SQL client
    if (word === 'HELP;') {
      process.stdout.write(SHELL_HELP);
      pending = '';
    } else if (endsStatement(pending)) {
      running = true;
      try {
        await runText(session, pending, o);
      } catch (err) {
        process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      }
      running = false;
      pending = '';
    }
    rl.setPrompt(pending ? '    -> ' : 'clink> ');
    rl.prompt();
  }
  rl.close();
  const kept = (rl as unknown as { history: string[] }).history.slice(0, HISTORY_LINES).reverse();
  await writeFile(historyPath, kept.join('\n') + '\n').catch(() => undefined);
  // The terminal is done with: a closed interface can leave it referenced (the end of input arriving
  // while a query ran), which would keep the process alive after the shell.
  process.stdin.destroy();
  process.stdout.write('\n');
}

/** Whether the text ends with ';' outside a string literal or comment. */
export function endsStatement(text: string): boolean {
  let quote: string | undefined;
  let last = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      continue;
    }
    if (c === "'" || c === '`') quote = c;
    else if (c === '-' && text[i + 1] === '-') {
      const nl = text.indexOf('\n', i);
      if (nl === -1) break;
      i = nl;
      continue;
    }
    if (!/\s/.test(c)) last = c;
  }
  return quote === undefined && last === ';';
}

const SHELL_HELP = `Statements (end each with ';'):
  CREATE [TEMPORARY] TABLE t (col TYPE, ..., WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = '...', ...)
  CREATE [TEMPORARY] VIEW v AS SELECT ...     DROP TABLE|VIEW [IF EXISTS] t     ALTER TABLE t RENAME TO u
  SHOW TABLES     DESCRIBE t     EXPLAIN SELECT ...
  SELECT ... FROM t | TABLE(TUMBLE|HOP|SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL ...)) [WHERE ...] [GROUP BY ...]
  INSERT INTO t SELECT ...     EXECUTE STATEMENT SET BEGIN INSERT ...; INSERT ...; END
  SET 'execution.checkpointing.timeout' = '30 s'     SET     RESET ['key']   (checkpoint settings of later jobs)
The README's SQL section has the supported-syntax table.
`;
