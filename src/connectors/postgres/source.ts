/**
 * The PostgreSQL source: a bounded scan of a table or a query, split into key ranges of `keyColumn`
 * (one per subtask, from its minimum and maximum at the start), each read in key order a page at a time.
 * The last key read is the checkpoint position, so a restore continues after it.
 */
import type { z } from 'zod';
import { ConnectorError } from '../../errors.js';
import type { SourceContext, SourceOutput, SourceReader } from '../../sdk/index.js';
import { ReconnectingClient } from './client.js';
import type { PostgresSourceOptions } from './options.js';
import { quoteIdent } from './sql.js';

type Options = z.output<typeof PostgresSourceOptions>;

const WHO = 'postgres source';

/** This subtask's key range [from, to) and the last key it emitted (null: none yet). */
interface Position {
  from: string;
  to: string;
  last: string | null;
}

export async function createPostgresReader(
  o: Options,
  ctx: SourceContext,
): Promise<SourceReader<Record<string, unknown>>> {
  const db = new ReconnectingClient(o, WHO, ctx.signal);
  await db.connection();
  return new PostgresReader(o, ctx, db);
}

class PostgresReader implements SourceReader<Record<string, unknown>> {
  private position: Position | undefined;
  private readonly relation: string;
  private readonly key: string;
  private done = false;

  constructor(
    private readonly o: Options,
    private readonly ctx: SourceContext,
    private readonly db: ReconnectingClient,
  ) {
    this.relation = o.table !== undefined ? quoteIdent(o.table) : `(${o.query}) AS scanned`;
    this.key = quoteIdent(o.keyColumn);
  }

  snapshot(): unknown {
    return this.position;
  }

  restore(position: unknown): void {
    if (position) this.position = position as Position;
  }

  async read(out: SourceOutput<Record<string, unknown>>, max: number): Promise<'MORE' | 'END'> {
    if (this.done) return 'END';
    const p = (this.position ??= await this.range());
    const limit = Math.min(max, this.o.fetchRows);
    const params: unknown[] = [p.from, p.to, limit];
    const after = p.last === null ? '' : ` AND ${this.key} > $4`;
    if (p.last !== null) params.push(p.last);
    const sql = `SELECT * FROM ${this.relation} WHERE ${this.key} >= $1 AND ${this.key} < $2${after} ORDER BY ${this.key} LIMIT $3`;
    // A page is a query on its own: after a lost connection, a new one reads it again from the same key.
    const rows = await this.db.run(
      `scanning ${this.o.table ?? 'the query'}`,
      async (c) => (await c.query(sql, params)).rows as Record<string, unknown>[],
    );
    for (const row of rows) out.collect(row);
    if (rows.length > 0) p.last = String(rows[rows.length - 1]![this.o.keyColumn]);
    if (rows.length < limit) this.done = true;
    return this.done ? 'END' : 'MORE';
  }

  /** Split [min, max] of the key evenly over the subtasks; this subtask's share. */
  private async range(): Promise<Position> {
    const r = await this.db.run(`reading the key range of ${this.o.table ?? 'the query'}`, (c) =>
      c.query<{ lo: string | null; hi: string | null }>(
        `SELECT min(${this.key})::text AS lo, max(${this.key})::text AS hi FROM ${this.relation}`,
      ),
    );
    const { lo, hi } = r.rows[0]!;
    if (lo === null || hi === null) return { from: '0', to: '0', last: null };
    if (!/^-?\d+$/.test(lo) || !/^-?\d+$/.test(hi))
      throw new ConnectorError(
        `${WHO}: keyColumn '${this.o.keyColumn}' must be an integer column (got '${lo}'); name another with option keyColumn`,
      );
    const [min, max] = [BigInt(lo), BigInt(hi) + 1n];
    const n = BigInt(this.ctx.parallelism);
    const i = BigInt(this.ctx.subtaskIndex);
    const span = max - min;
    return { from: String(min + (span * i) / n), to: String(min + (span * (i + 1n)) / n), last: null };
  }

  async close(): Promise<void> {
    await this.db.drop();
  }
}
