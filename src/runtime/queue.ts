/**
 * InputQueue: a task's single input, fed by every upstream channel. It is bounded in record batches:
 * producers push without waiting, then wait for room before producing more (backpressure). Control
 * elements (watermarks, status, end) do not count against the bound. A batch's `onTaken` (a remote
 * channel's credit) is the consumer's to call when it processes the batch, not when it takes it: a
 * batch held back by barrier alignment keeps its credit until it is processed.
 */
import { deferred, type Deferred } from '../util/index.js';
import { BATCH, type StreamElement } from './elements.js';
import type { ChannelSink } from './subtask.js';

export class InputQueue {
  private buf: (StreamElement | undefined)[] = [];
  private head = 0;
  private batches = 0;
  /** Batches of each channel taken but held back by barrier alignment (not yet processed). */
  private readonly held: number[] = [];
  private consumer: Deferred<void> | null = null;
  private producers: Deferred<void>[] = [];
  private failure: unknown = undefined;
  /** The most batches ever held at once. */
  highWaterBatches = 0;

  constructor(readonly capacity: number) {}

  get isFull(): boolean {
    return this.batches >= this.capacity;
  }

  push(e: StreamElement): void {
    if (this.failure !== undefined) return;
    this.buf.push(e);
    if (e.kind === BATCH && ++this.batches > this.highWaterBatches) this.highWaterBatches = this.batches;
    const c = this.consumer;
    if (c) {
      this.consumer = null;
      c.resolve();
    }
  }

  poll(): StreamElement | undefined {
    if (this.head >= this.buf.length) return undefined;
    const e = this.buf[this.head]!;
    this.buf[this.head++] = undefined;
    if (this.head === this.buf.length) {
      this.buf = [];
      this.head = 0;
    } else if (this.head >= 1024) {
      this.buf = this.buf.slice(this.head);
      this.head = 0;
    }
    if (e.kind === BATCH && --this.batches < this.capacity) this.wakeProducers();
    return e;
  }

  /** The next element, waiting if there is none. Rejects once the queue has failed. */
  async take(): Promise<StreamElement> {
    for (;;) {
      const e = this.poll();
      if (e !== undefined) return e;
      if (this.failure !== undefined) throw this.failure;
      this.consumer ??= deferred<void>();
      await this.consumer.promise;
    }
  }

  /** Resolves once the queue has room for another batch. */
  waitNotFull(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (!this.isFull) return Promise.resolve();
    const d = deferred<void>();
    this.producers.push(d);
    return d.promise;
  }

  /**
   * The producer side of one channel: full when the queue is, or when this channel has a queue's worth
   * of batches held back by barrier alignment. So a channel that delivered the barrier stops at that
   * bound while the channels still owing it go on, and alignment cannot deadlock: a producer emits a
   * barrier to every target at once, so it is held only after every target has it.
   */
  channel(channel: number): ChannelSink {
    const q = this;
    return {
      push: (e) => q.push(e),
      get isFull() {
        return q.isFull || (q.held[channel] ?? 0) >= q.capacity;
      },
      waitNotFull: () => q.waitNotFullFor(channel),
    };
  }

  private waitNotFullFor(channel: number): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (!this.isFull && (this.held[channel] ?? 0) < this.capacity) return Promise.resolve();
    const d = deferred<void>();
    this.producers.push(d);
    return d.promise;
  }

  /** The consumer holds a batch of `channel` back (barrier alignment). */
  hold(channel: number): void {
    this.held[channel] = (this.held[channel] ?? 0) + 1;
  }

  /** A held batch of `channel` is released for processing: its producer may go on. */
  release(channel: number): void {
    this.held[channel] = Math.max(0, (this.held[channel] ?? 0) - 1);
    this.wakeProducers();
  }

  private wakeProducers(): void {
    if (this.producers.length === 0) return;
    const ps = this.producers;
    this.producers = [];
    for (const p of ps) p.resolve();
  }

  /** Wake every waiter with `err` and drop what is queued. */
  fail(err: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    this.buf = [];
    this.head = 0;
    this.batches = 0;
    this.consumer?.reject(err);
    this.consumer = null;
    for (const p of this.producers) p.reject(err);
    this.producers = [];
  }
}
