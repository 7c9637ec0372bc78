/**
 * The Kafka sink. at-least-once: one idempotent producer per subtask whose sends are all acknowledged
 * before a checkpoint's barrier passes. exactly-once: a transaction per subtask per checkpoint, under
 * transactional id `<prefix>-<subtask>-<n>` with n counting up (each id carries one transaction), flushed
 * at the barrier and committed when the checkpoint completes; a restore commits what its checkpoint
 * recorded and then fences the ids after it until it reaches one never used, aborting what a crashed
 * writer left open.
 */
import { compatibilityPartitioner, Producer, type MessageToProduce, type ProducerOptions } from '@platformatic/kafka';
import type { z } from 'zod';
import { ConnectorError } from '../../errors.js';
import type { RecoverScope, SinkContext, SinkWriter } from '../../sdk/index.js';
import { encode } from '../formats.js';
import { retriesWithin, retryDelayMs } from '../options.js';
import type { KafkaSinkOptions } from './options.js';
import { forceClose, kafkaErrorName, TransactionsClient, type TxnRef } from './transactions.js';

type BufferProducer = Producer<Buffer, Buffer, Buffer, Buffer>;

type Options = z.output<typeof KafkaSinkOptions>;

/** What a checkpoint records for one subtask: its transaction (if it wrote anything) and the next id. */
export interface KafkaCommittable {
  /** The number of the first transactional id not used before this checkpoint. */
  next: number;
  /** The subtask whose ids these are (absent in checkpoints from before rescaling: the restoring subtask's). */
  subtask?: number;
  txn?: TxnRef & { seq: number };
}

interface OpenTxn {
  seq: number;
  producer: BufferProducer;
  tx: NonNullable<BufferProducer['transaction']>;
}

export function createKafkaWriter(o: Options, ctx: SinkContext): SinkWriter<unknown> {
  return o.delivery === 'exactly-once' ? new TransactionalWriter(o, ctx) : new IdempotentWriter(o, ctx);
}

function producerOptions(o: Options, transactionalId?: string): ProducerOptions<Buffer, Buffer, Buffer, Buffer> {
  return {
    clientId: o.clientId,
    bootstrapBrokers: o.bootstrapServers,
    idempotent: true,
    acks: -1,
    // InitProducerId as a new producer: the library's default (0, 0) claims to be producer 0 at epoch 0.
    producerId: -1n,
    producerEpoch: -1,
    // Sent as the transaction timeout (InitProducerId) and the broker's produce timeout.
    timeout: transactionTimeoutOf(o),
    requestTimeout: o.requestTimeoutMs,
    // A broker restarting: the idempotent producer resends under the same sequence numbers, for up to reconnectTimeoutMs.
    retries: retriesWithin(o.reconnectTimeoutMs),
    retryDelay: (_client, _operation, attempt) => retryDelayMs(attempt),
    partitioner: compatibilityPartitioner,
    ...(transactionalId ? { transactionalId } : {}),
  };
}

function transactionTimeoutOf(o: Options): number {
  return o.delivery === 'exactly-once' ? o.transactionTimeoutMs : o.requestTimeoutMs;
}

/**
 * Buffers writes and sends them one request at a time (an idempotent producer's sequence numbers need
 * its requests in order); what is written while a request is out goes in the next, so batches grow with
 * the load. Writes wait only when maxBufferedRecords are waiting.
 */
abstract class BatchingWriter implements SinkWriter<unknown> {
  private buffer: MessageToProduce[] = [];
  private active: Promise<void> | undefined;
  private failure: unknown;

  constructor(
    protected readonly o: Options,
    protected readonly ctx: SinkContext,
  ) {}

  protected abstract send(messages: MessageToProduce[]): Promise<unknown>;

  write(value: unknown): void {
    let key: Buffer | undefined;
    if (this.o.keyField !== undefined)
      key = encode(this.o.keyFormat, (value as Record<string, unknown> | null)?.[this.o.keyField]);
    const bytes = encode(this.o.valueFormat, value);
    this.buffer.push({ topic: this.o.topic, key, value: bytes });
  }

  async flush(): Promise<void> {
    this.rethrow();
    this.pump();
    while (this.buffer.length >= this.o.maxBufferedRecords && this.active) {
      await this.active;
      this.rethrow();
    }
  }

  /** Start the next request if none is out: what is buffered, up to maxRequestBytes. */
  private pump(): void {
    if (this.active || this.buffer.length === 0 || this.failure !== undefined) return;
    let take = 0;
    for (let bytes = 0; take < this.buffer.length && bytes < this.o.maxRequestBytes; take++) {
      const m = this.buffer[take]!;
      bytes += (m.value?.length ?? 0) + (m.key?.length ?? 0) + 24;
    }
    const messages = take === this.buffer.length ? this.buffer : this.buffer.slice(0, take);
    this.buffer = take === this.buffer.length ? [] : this.buffer.slice(take);
    this.active = this.send(messages).then(
      () => {
        this.active = undefined;
        this.pump();
      },
      (err) => {
        this.failure ??= err;
        this.active = undefined;
      },
    );
  }

  /** Everything written so far is acknowledged (or the first failure is thrown). */
  protected async drain(): Promise<void> {
    this.pump();
    while (this.active) {
      await this.active;
      this.rethrow();
    }
    this.rethrow();
  }

  private rethrow(): void {
    if (this.failure === undefined) return;
    const err = this.failure;
    this.failure = undefined;
    throw describeSendFailure(this.o, err);
  }
}

function describeSendFailure(o: Options, err: unknown): Error {
  if (err instanceof ConnectorError) return err;
  const name = kafkaErrorName(err);
  const why =
    name === 'UNKNOWN_TOPIC_OR_PARTITION'
      ? `topic '${o.topic}' does not exist; create it first`
      : (name ?? (err as Error).message);
  return new ConnectorError(`kafka sink: writing to '${o.topic}' at ${o.bootstrapServers.join(',')} failed: ${why}`, {
    cause: err,
  });
}

class IdempotentWriter extends BatchingWriter {
  private readonly producer = new Producer<Buffer, Buffer, Buffer, Buffer>(producerOptions(this.o));

  protected send(messages: MessageToProduce[]): Promise<unknown> {
    return this.producer.send({ messages, compression: this.o.compression });
  }
  async preCommit(): Promise<undefined> {
    await this.drain();
    return undefined;
  }
  async finish(): Promise<void> {
    await this.drain();
  }
  async close(): Promise<void> {
    await forceClose(this.producer);
  }
}

class TransactionalWriter extends BatchingWriter {
  private readonly txns: TransactionsClient;
  private readonly stopping = new AbortController();
  /** The number of the next transactional id, once the ids a previous run used are fenced. */
  private next: Promise<number> | undefined;
  private current: OpenTxn | undefined;
  /** Flushed at a barrier, waiting for their checkpoint to complete. */
  private readonly prepared = new Map<number, OpenTxn>();

  constructor(o: Options, ctx: SinkContext) {
    super(o, ctx);
    this.txns = new TransactionsClient({
      brokers: o.bootstrapServers,
      clientId: o.clientId,
      requestTimeoutMs: o.requestTimeoutMs,
      reconnectTimeoutMs: o.reconnectTimeoutMs,
      signal: this.stopping.signal,
    });
  }

  /** Transactional id `seq` of subtask `subtask` (this one's by default). */
  private idOf(seq: number, subtask = this.ctx.subtaskIndex): string {
    return `${this.o.transactionalIdPrefix!}-${subtask}-${seq}`;
  }

  protected async send(messages: MessageToProduce[]): Promise<unknown> {
    const txn = this.current ?? (this.current = await this.begin());
    return txn.tx.send({ messages, compression: this.o.compression });
  }

  private async begin(): Promise<OpenTxn> {
    // A fresh start (no restore) fences what an earlier run of this sink left, from id 0.
    const seq = await (this.next ??= this.fenceFrom(0));
    this.next = Promise.resolve(seq + 1);
    const producer = new Producer<Buffer, Buffer, Buffer, Buffer>(producerOptions(this.o, this.idOf(seq)));
    try {
      return { seq, producer, tx: await producer.beginTransaction() };
    } catch (err) {
      await forceClose(producer);
      const name = kafkaErrorName(err);
      if (name === 'INVALID_TRANSACTION_TIMEOUT') {
        throw new ConnectorError(
          `kafka sink: the broker refuses transactionTimeoutMs ${this.o.transactionTimeoutMs}: it must not exceed the broker's transaction.max.timeout.ms`,
        );
      }
      throw err;
    }
  }

  async preCommit(): Promise<KafkaCommittable> {
    await this.drain();
    const txn = this.current;
    this.current = undefined;
    if (!txn) return { next: await (this.next ??= this.fenceFrom(0)), subtask: this.ctx.subtaskIndex };
    this.prepared.set(txn.seq, txn);
    return {
      next: txn.seq + 1,
      subtask: this.ctx.subtaskIndex,
      txn: {
        seq: txn.seq,
        transactionalId: this.idOf(txn.seq),
        producerId: String(txn.producer.producerId),
        producerEpoch: txn.producer.producerEpoch!,
      },
    };
  }

  async commit(committable: unknown): Promise<void> {
    const c = committable as KafkaCommittable;
    if (!c.txn) return;
    const mine = this.prepared.get(c.txn.seq);
    if (mine) {
      await mine.tx.commit();
      this.prepared.delete(c.txn.seq);
      await forceClose(mine.producer);
      return;
    }
    // Restored: the writer that prepared it is gone; commit it from the id and epoch recorded.
    await this.txns.commit(c.txn);
  }

  /**
   * After a restore: everything after the checkpoint's transactions is fenced, so aborted: this subtask's
   * ids, and after a rescale those of the earlier subtasks it takes over.
   */
  async recover(committed: readonly unknown[], scope: RecoverScope): Promise<void> {
    const own = this.ctx.subtaskIndex;
    const nextOf = (i: number): number =>
      Math.max(
        0,
        ...committed
          .map((c) => c as KafkaCommittable)
          .filter((c) => (c.subtask ?? own) === i)
          .map((c) => c.next),
      );
    for (const i of scope.subtasks) if (i !== own) await this.fenceFrom(nextOf(i), i);
    this.next = this.fenceFrom(nextOf(own));
    await this.next;
  }

  /** Fence ids of subtask `subtask` (this one's by default) from `seq` up to the first never used; returns that one's number. */
  private async fenceFrom(seq: number, subtask = this.ctx.subtaskIndex): Promise<number> {
    for (let n = seq; ; n++) {
      if ((await this.txns.fence(this.idOf(n, subtask), this.o.transactionTimeoutMs)) === 0) return n;
    }
  }

  async finish(): Promise<void> {
    // Without checkpoints the end of input is the commit.
    await this.drain();
    const txn = this.current;
    this.current = undefined;
    if (txn) {
      await txn.tx.commit();
      await forceClose(txn.producer);
    }
  }

  async close(): Promise<void> {
    // An open or prepared transaction stays open on the broker: the restore that follows a failure
    // commits or aborts it, with what the checkpoint says.
    this.stopping.abort();
    const producers = [this.current, ...this.prepared.values()]
      .filter((t): t is OpenTxn => t !== undefined)
      .map((t) => t.producer);
    await Promise.all(producers.map(forceClose));
    await this.txns.close();
  }
}
