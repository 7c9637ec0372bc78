/**
 * The PostgreSQL sink. at-least-once: each batch is its own transaction (with upsert, a replay rewrites
 * the same rows). exactly-once: one transaction per subtask per checkpoint, PREPARE TRANSACTION
 * '<prefix>-<subtask>-<checkpoint>' at the barrier and COMMIT PREPARED when the checkpoint completes; a
 * restore commits what its checkpoint recorded and rolls back every other prepared transaction of the
 * subtask, as does a fresh start (what a crashed earlier run left would hold its locks for ever).
 */
import type pg from 'pg';
import type { z } from 'zod';
import type { RecoverScope, SinkContext, SinkWriter } from '../../sdk/index.js';
import { ReconnectingClient } from './client.js';
import type { PostgresSinkOptions } from './options.js';
import { insertStatement, maxRowsPerStatement } from './sql.js';

type Options = z.output<typeof PostgresSinkOptions>;

export interface PostgresCommittable {
  gid?: string;
}

const WHO = 'postgres sink';

/** The prepared-transaction names of a subtask's transactions start with this. */
function prefixOf(o: { transactionIdPrefix?: string | undefined }, subtask: number): string {
  return `${o.transactionIdPrefix ?? ''}-${subtask}-`;
}

export async function createPostgresWriter(o: Options, ctx: SinkContext): Promise<SinkWriter<unknown>> {
  const w = new PostgresWriter(o, ctx);
  await w.connect();
  return w;
}

class PostgresWriter implements SinkWriter<unknown> {
  private rows: unknown[][] = [];
  private columns: string[] | undefined;
  private inTransaction = false;
  private readonly exactlyOnce: boolean;
  private readonly prefix: string;
  /** Exactly-once: other runs' prepared transactions are rolled back before the first write. */
  private cleared: Promise<void> | undefined;
  private readonly statements = new Map<number, string>();
  /** Ends what its connections wait for when the writer closes. */
  private readonly stopping = new AbortController();
  /** The writing connection: a lost one is replaced, but an exactly-once transaction it held is lost with it. */
  private readonly db: ReconnectingClient;
  /**
   * COMMIT PREPARED and ROLLBACK PREPARED cannot run inside a transaction, and the writing connection has
   * the next checkpoint's open: they go over a second connection. What they finish survives a restart
   * of the server, so they ride one out.
   */
  private readonly control: ReconnectingClient;

  constructor(
    private readonly o: Options,
    ctx: SinkContext,
  ) {
    this.exactlyOnce = o.delivery === 'exactly-once';
    this.prefix = prefixOf(o, ctx.subtaskIndex);
    this.db = new ReconnectingClient(o, WHO, this.stopping.signal);
    this.control = new ReconnectingClient(o, WHO, this.stopping.signal);
  }

  /** Connect the writing connection (a server that does not answer yet is waited for, up to reconnectTimeoutMs). */
  async connect(): Promise<void> {
    await this.db.connection();
  }

  write(value: unknown): void {
    const record = value as Record<string, unknown>;
    const columns = (this.columns ??= this.o.columns ?? Object.keys(record));
    const row = new Array<unknown>(columns.length);
    for (let i = 0; i < columns.length; i++) row[i] = record[columns[i]!];
    this.rows.push(row);
  }

  async flush(): Promise<void> {
    if (this.rows.length === 0) return;
    const rows = this.rows;
    this.rows = [];
    const doing = `writing ${rows.length} rows to ${this.o.table}`;
    if (this.exactlyOnce) {
      await (this.cleared ??= this.rollBackPrepared(this.prefix));
      // Inside the checkpoint's transaction: a lost connection loses it, and the subtask fails (a restart writes it again).
      await this.db.run(
        doing,
        async (c) => {
          if (!this.inTransaction) {
            await c.query('BEGIN');
            this.inTransaction = true;
          }
          await this.insert(c, rows);
        },
        false,
      );
    } else {
      // A batch is its own transaction: after a lost connection a new one writes it again (at-least-once).
      await this.db.run(doing, async (c) => {
        await c.query('BEGIN');
        try {
          await this.insert(c, rows);
          await c.query('COMMIT');
        } catch (err) {
          await c.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      });
    }
  }

  private async insert(c: pg.Client, rows: unknown[][]): Promise<void> {
    const columns = this.columns!;
    const perStatement = maxRowsPerStatement(columns.length, this.o.batchRows);
    for (let i = 0; i < rows.length; i += perStatement) {
      let chunk = rows.slice(i, i + perStatement);
      if (this.o.mode === 'upsert') chunk = this.lastPerKey(chunk);
      await c.query(this.statementFor(chunk.length), chunk.flat());
    }
  }

  /** One statement may not upsert a key twice: keep each key's last row, in order. */
  private lastPerKey(rows: unknown[][]): unknown[][] {
    const key = this.o.primaryKey!.map((k) => this.columns!.indexOf(k));
    const byKey = new Map<string, unknown[]>();
    for (const r of rows) {
      const k = JSON.stringify(key.map((i) => r[i]));
      byKey.delete(k);
      byKey.set(k, r);
    }
    return [...byKey.values()];
  }

  private statementFor(rows: number): string {
    let sql = this.statements.get(rows);
    if (!sql) {
      sql = insertStatement(
        this.o.table,
        this.columns!,
        rows,
        this.o.mode === 'upsert' ? this.o.primaryKey : undefined,
      );
      this.statements.set(rows, sql);
    }
    return sql;
  }

  async preCommit(checkpointId: number): Promise<PostgresCommittable | undefined> {
    await this.flush();
    if (!this.exactlyOnce || !this.inTransaction) return this.exactlyOnce ? {} : undefined;
    const gid = `${this.prefix}${checkpointId}`;
    await this.db.run(
      `PREPARE TRANSACTION '${gid}'`,
      (c) => c.query(`PREPARE TRANSACTION ${c.escapeLiteral(gid)}`),
      false,
    );
    this.inTransaction = false;
    return { gid };
  }

  async commit(committable: unknown): Promise<void> {
    const gid = (committable as PostgresCommittable | undefined)?.gid;
    if (!gid) return;
    await this.control.run(`COMMIT PREPARED '${gid}'`, async (c) => {
      await c.query(`COMMIT PREPARED ${c.escapeLiteral(gid)}`).catch((err: { code?: string }) => {
        // 42704: no such prepared transaction: committed already (a commit retried after a restore).
        if (err.code !== '42704') throw err;
      });
    });
  }

  /**
   * After a restore (its checkpoint's transactions committed): roll back every other one of this subtask
   * and of the earlier subtasks it takes over after a rescale.
   */
  recover(_committed: readonly unknown[], scope: RecoverScope): Promise<void> {
    const prefixes = new Set([this.prefix, ...scope.subtasks.map((i) => prefixOf(this.o, i))]);
    this.cleared = (async () => {
      for (const p of prefixes) await this.rollBackPrepared(p);
    })();
    return this.cleared;
  }

  private async rollBackPrepared(prefix: string): Promise<void> {
    const r = await this.control.run('listing prepared transactions', (c) =>
      c.query<{ gid: string }>(
        'SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND left(gid, length($1)) = $1',
        [prefix],
      ),
    );
    for (const { gid } of r.rows) {
      if (!/^\d+$/.test(gid.slice(prefix.length))) continue; // another sink's prefix that starts like ours
      await this.control.run(`ROLLBACK PREPARED '${gid}'`, async (c) => {
        await c.query(`ROLLBACK PREPARED ${c.escapeLiteral(gid)}`).catch((err: { code?: string }) => {
          if (err.code !== '42704') throw err;
        });
      });
    }
  }

  async finish(): Promise<void> {
    await this.flush();
    // Without checkpoints the end of input is the commit.
    if (this.inTransaction) {
      await this.db.run('COMMIT', (c) => c.query('COMMIT'), false);
      this.inTransaction = false;
    }
  }

  async close(): Promise<void> {
    // An open transaction dies with the connection; a prepared one waits for the restore to decide.
    this.stopping.abort();
    await this.db.drop();
    await this.control.drop();
  }
}
