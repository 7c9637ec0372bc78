/**
 * Before a job deploys: the server takes the connection string's credentials, the table (or query) is
 * there, and an exactly-once sink's server allows prepared transactions. A refusal names the server
 * (never the password) and the option to fix.
 */
import { ConnectorError } from '../../errors.js';
import type { ConnectorCheckContext } from '../../sdk/index.js';
import { connect, describeError, serverOf } from './client.js';

export async function checkPostgres(
  side: 'source' | 'sink',
  o: { connectionString: string; table?: string | undefined; query?: string | undefined; delivery?: string },
  ctx: ConnectorCheckContext,
): Promise<void> {
  const who = `postgres ${side}`;
  let client;
  try {
    client = await connect({ connectionString: o.connectionString, statementTimeoutMs: ctx.timeoutMs }, who);
  } catch (err) {
    throw new ConnectorError(`${(err as Error).message}; check the option connectionString and that the server runs`, {
      cause: err,
    });
  }
  try {
    const what = o.table !== undefined ? `table ${o.table}` : 'the query';
    await client
      .query(o.table !== undefined ? `SELECT * FROM ${o.table} LIMIT 0` : `SELECT * FROM (${o.query!}) AS q LIMIT 0`)
      .catch((err: unknown) => {
        throw describeError(who, `reading ${what} at ${serverOf(o.connectionString)}`, err);
      });
    if (o.delivery === 'exactly-once') {
      const r = await client.query<{ max_prepared_transactions: string }>('SHOW max_prepared_transactions');
      if (Number(r.rows[0]?.max_prepared_transactions ?? 0) <= 0) {
        throw new ConnectorError(
          `${who}: prepared transactions are disabled at ${serverOf(o.connectionString)} (max_prepared_transactions = 0), which delivery 'exactly-once' needs; set max_prepared_transactions > 0 on the server (postgresql.conf, then restart it) or use delivery 'at-least-once'`,
        );
      }
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}
