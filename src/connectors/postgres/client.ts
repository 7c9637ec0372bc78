/** Connecting to PostgreSQL, and errors that name the server without the password. */
import pg from 'pg';
import { ConnectorError } from '../../errors.js';

export interface ConnectionOptions {
  connectionString: string;
  statementTimeoutMs: number;
}

/** host:port/database of a connection string, for messages (never the password). */
export function serverOf(connectionString: string): string {
  try {
    const u = new URL(connectionString);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return 'the server in connectionString';
  }
}

export async function connect(o: ConnectionOptions, who: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: o.connectionString, statement_timeout: o.statementTimeoutMs, connectionTimeoutMillis: o.statementTimeoutMs });
  // A server that goes away surfaces on the next query; without a listener the error would crash the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    // Refused, reset or timed out, or a server starting or stopping (SQLSTATE class 57P: "not yet accepting
    // connections", "starting up", "shutting down"): it may be restarting. A bad password or database is not transient.
    const sqlState = (err as { code?: unknown }).code;
    const transient =
      (typeof sqlState === 'string' && sqlState.startsWith('57P')) || /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|timeout|starting up|shutting down|recovery|not yet accepting connections/i.test((err as Error).message);
    throw new ConnectorError(`${who}: cannot connect to PostgreSQL at ${serverOf(o.connectionString)}: ${(err as Error).message}`, { cause: err, transient });
  }
  return client;
}

/** A query error as a ConnectorError that says what was being done and, where known, how to fix it. */
export function describeError(who: string, doing: string, err: unknown): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const e = err as { code?: string; message?: string };
  let fix = '';
  if (e.code === '55000' && /prepared transactions are disabled/.test(e.message ?? '')) fix = "; set max_prepared_transactions > 0 on the server (postgresql.conf, then restart it) or use delivery 'at-least-once'";
  else if (e.code === '42P01') fix = '; create the table first';
  else if (e.code === '42703') fix = '; the record has a field the table has no column for (name the columns with option columns)';
  else if (e.code === '42P10') fix = '; primaryKey must name the columns of a primary key or unique constraint';
  return new ConnectorError(`${who}: ${doing} failed: ${e.message ?? String(err)}${e.code ? ` (SQLSTATE ${e.code})` : ''}${fix}`, { cause: err });
}
