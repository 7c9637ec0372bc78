/**
 * The transactional-id protocol the exactly-once sink needs beyond what a producer object offers: commit
 * a transaction a crashed writer left prepared, from the producer id and epoch the checkpoint recorded
 * (what Flink's Kafka sink does when it resumes a transaction), and abort whatever later transactions
 * that writer had open, by fencing their ids. Each id carries one transaction only (ids are numbered in
 * order per subtask), so a commit that finds its transaction already ended cannot be confused with a
 * newer one under the same id.
 */
import { Connection, endTxnV4, findCoordinatorV6, initProducerIdV5 } from '@platformatic/kafka';
import { ConnectorError } from '../../errors.js';

const TRANSACTION_KEY = 1;
/** Retriable answers while the coordinator finishes a previous step or loads its state. */
const RETRIABLE = new Set([
  'CONCURRENT_TRANSACTIONS',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'NOT_COORDINATOR',
  'COORDINATOR_NOT_AVAILABLE',
]);

export interface TxnRef {
  transactionalId: string;
  producerId: string;
  producerEpoch: number;
}

/** The name of the first protocol error in `err` (e.g. 'PRODUCER_FENCED'), if it is one. */
export function kafkaErrorName(err: unknown): string | undefined {
  const e = err as { apiId?: string; errors?: unknown[] } | undefined;
  if (typeof e?.apiId === 'string') return e.apiId;
  for (const inner of e?.errors ?? []) {
    const name = kafkaErrorName(inner);
    if (name) return name;
  }
  return undefined;
}

/** Close a client without waiting for what it has in flight, ignoring errors (it is being dropped). */
export function forceClose(client: { close(force?: boolean): Promise<void> }): Promise<void> {
  return client.close(true).catch(() => undefined);
}

export interface TransactionsClientOptions {
  brokers: string[];
  clientId: string;
  requestTimeoutMs: number;
  /** How long a coordinator that does not answer is retried. */
  reconnectTimeoutMs: number;
  signal: AbortSignal;
}

/** Talks to the transaction coordinators of `brokers` over plain connections; close() when done. */
export class TransactionsClient {
  private readonly connections = new Map<string, Connection>();

  constructor(private readonly o: TransactionsClientOptions) {}

  /** Commit the transaction `ref` describes; done already (a retried commit) counts as done. */
  async commit(ref: TxnRef): Promise<void> {
    await this.withCoordinator(ref.transactionalId, async (conn) => {
      try {
        await endTxnV4.api.async(conn, ref.transactionalId, BigInt(ref.producerId), ref.producerEpoch, true);
      } catch (err) {
        const name = kafkaErrorName(err);
        if (name && RETRIABLE.has(name)) throw err;
        if (name === 'PRODUCER_FENCED' || name === 'INVALID_PRODUCER_EPOCH' || name === 'INVALID_TXN_STATE') {
          throw new ConnectorError(
            `kafka sink: transaction '${ref.transactionalId}' of a completed checkpoint was ended by the broker before its commit (${name}): ` +
              `the broker aborts a transaction open longer than transactionTimeoutMs; raise it (up to the broker's transaction.max.timeout.ms) above the longest restore`,
          );
        }
        throw err;
      }
    });
  }

  /**
   * Fence `transactionalId`, aborting any transaction open under it; returns the epoch it got (0: the
   * id was never used).
   */
  async fence(transactionalId: string, transactionTimeoutMs: number): Promise<number> {
    return this.withCoordinator(transactionalId, async (conn) => {
      const r = await initProducerIdV5.api.async(conn, transactionalId, transactionTimeoutMs, -1n, -1);
      return r.producerEpoch;
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close().catch(() => undefined)));
    this.connections.clear();
  }

  private async withCoordinator<T>(transactionalId: string, op: (conn: Connection) => Promise<T>): Promise<T> {
    let delay = 50;
    const deadline = Date.now() + this.o.reconnectTimeoutMs;
    for (;;) {
      try {
        return await op(await this.coordinatorOf(transactionalId));
      } catch (err) {
        const name = kafkaErrorName(err);
        const network = (err as { code?: string }).code === 'PLT_KFK_NETWORK';
        const retriable = (name && RETRIABLE.has(name)) || network;
        if (!retriable || Date.now() + delay > deadline || this.o.signal.aborted) {
          if (!retriable) throw err;
          // The broker may be restarting: a restart of the job may find it back.
          throw new ConnectorError(
            `kafka: the transaction coordinator for '${transactionalId}' at ${this.o.brokers.join(',')} did not answer: ${name ?? (err as Error).message}`,
            { cause: err, transient: true },
          );
        }
        if (name === 'NOT_COORDINATOR' || network) await this.close();
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 1000);
      }
    }
  }

  private async coordinatorOf(transactionalId: string): Promise<Connection> {
    const bootstrap = await this.connect(this.o.brokers[0]!);
    const r = await findCoordinatorV6.api.async(bootstrap, TRANSACTION_KEY, [transactionalId]);
    const c = r.coordinators.find((x) => x.key === transactionalId);
    if (!c || c.errorCode !== 0)
      throw Object.assign(new Error(`no transaction coordinator for '${transactionalId}'`), {
        apiId: 'COORDINATOR_NOT_AVAILABLE',
      });
    return this.connect(`${c.host}:${c.port}`);
  }

  private async connect(hostPort: string): Promise<Connection> {
    const known = this.connections.get(hostPort);
    if (known) return known;
    const i = hostPort.lastIndexOf(':');
    const conn = new Connection(this.o.clientId, {
      requestTimeout: this.o.requestTimeoutMs,
      connectTimeout: Math.min(this.o.requestTimeoutMs, 10_000),
    });
    await conn.connect(hostPort.slice(0, i), Number(hostPort.slice(i + 1)));
    this.connections.set(hostPort, conn);
    return conn;
  }
}
