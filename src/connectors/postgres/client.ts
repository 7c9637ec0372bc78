/** Connecting to PostgreSQL, and errors that name the server without the password. */
import pg from 'pg';
import { ConnectorError } from '../../errors.js';
import { retrying } from '../options.js';

export interface ConnectionOptions {
  connectionString: string;
  statementTimeoutMs: number;
}

/**
 * After this error the connection is gone, and a new one may succeed: the server shut down, restarted or
 * crashed, or the network dropped it (SQLSTATE class 57P, 08, or a socket error).
 */
export function connectionLost(err: unknown): boolean {
  if (err instanceof ConnectorError) return err.transient || connectionLost(err.cause);
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && (code.startsWith('57P') || code.startsWith('08'))) return true;
  return /Connection terminated|ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|not queryable|connection error|Client was closed/i.test(
    (err as Error | undefined)?.message ?? '',
  );
}

/**
 * Connect, riding out a server that does not answer yet (restarting, a short outage) for up to
 * `reconnectTimeoutMs`; a refusal that will not pass (a bad password or database) fails at once.
 */
export async function connectRetrying(
  o: ConnectionOptions & { reconnectTimeoutMs: number },
  who: string,
  signal: AbortSignal,
): Promise<pg.Client> {
  return retrying(() => connect(o, who), {
    timeoutMs: o.reconnectTimeoutMs,
    signal,
    retriable: (err) => err instanceof ConnectorError && err.transient,
  });
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
  const client = new pg.Client({
    connectionString: o.connectionString,
    statement_timeout: o.statementTimeoutMs,
    connectionTimeoutMillis: o.statementTimeoutMs,
  });
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
      (typeof sqlState === 'string' && sqlState.startsWith('57P')) ||
      /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|timeout|starting up|shutting down|recovery|not yet accepting connections/i.test(
        (err as Error).message,
      );
    throw new ConnectorError(
      `${who}: cannot connect to PostgreSQL at ${serverOf(o.connectionString)}: ${(err as Error).message}`,
      { cause: err, transient },
    );
  }
  return client;
}

/** A query error as a ConnectorError that says what was being done and, where known, how to fix it. */
export function describeError(who: string, doing: string, err: unknown): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const e = err as { code?: string; message?: string };
  let fix = '';
  if (e.code === '55000' && /prepared transactions are disabled/.test(e.message ?? ''))
    fix =
      "; set max_prepared_transactions > 0 on the server (postgresql.conf, then restart it) or use delivery 'at-least-once'";
  else if (e.code === '42P01') fix = '; create the table first';
  else if (e.code === '42703')
    fix = '; the record has a field the table has no column for (name the columns with option columns)';
  else if (e.code === '42P10') fix = '; primaryKey must name the columns of a primary key or unique constraint';
  return new ConnectorError(
    `${who}: ${doing} failed: ${e.message ?? String(err)}${e.code ? ` (SQLSTATE ${e.code})` : ''}${fix}`,
    { cause: err },
  );
}

/**
 * A connection replaced when it is lost. `run` runs a query on it; when the connection is lost under
 * it (a restart, a short outage) and `ride` allows (nothing the lost connection held is needed: an
 * at-least-once batch, a scan page, a COMMIT PREPARED), it connects again and runs the query again, for
 * up to reconnectTimeoutMs. Other failures name what was being done.
 */
export class ReconnectingClient {
  private client: pg.Client | undefined;

  constructor(
    private readonly o: ConnectionOptions & { reconnectTimeoutMs: number },
    private readonly who: string,
    private readonly signal: AbortSignal,
  ) {}

  /** The connection (made on first use), for what must stay on one connection (a transaction). */
  async connection(): Promise<pg.Client> {
    return (this.client ??= await connectRetrying(this.o, this.who, this.signal));
  }

  async run<T>(doing: string, query: (c: pg.Client) => Promise<T>, ride = true): Promise<T> {
    const once = async (): Promise<T> => {
      const c = await this.connection();
      try {
        return await query(c);
      } catch (err) {
        if (connectionLost(err)) await this.drop();
        throw err;
      }
    };
    try {
      return ride
        ? await retrying(once, { timeoutMs: this.o.reconnectTimeoutMs, signal: this.signal, retriable: connectionLost })
        : await once();
    } catch (err) {
      throw describeError(this.who, doing, err);
    }
  }

  /** Forget the connection (it is gone, or what it held is): the next use connects again. */
  async drop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }
}
