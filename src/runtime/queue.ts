/**
 * InputQueue: a task's single input, fed by every upstream channel. It is bounded in record batches:
 * producers push without waiting, then wait for room before producing more (backpressure). Control
 * elements (watermarks, status, end) do not count against the bound. A batch's `onTaken` (a remote
 * channel's credit) is the consumer's to call when it processes the batch, not when it takes it: a
 * batch held back by barrier alignment keeps its credit until it is processed.
 *
 * An unaligned checkpoint's barrier overtakes what is queued: it goes to a lane of its own, taken before
 * anything else. Elements are numbered as they are queued, so what came before a barrier on its channel
 * is known (InflightCapture); a tap sees every element queued while a capture runs.
 */
import { deferred, type Deferred } from '../util/index.js';
import { BARRIER, BATCH, type BarrierElement, type StreamElement } from './elements.js';
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
  /** Unaligned barriers, taken before anything queued. */
  private priority: BarrierElement[] = [];
  /** Elements ever queued in the ordinary lane, and ever taken from it: element n of the queue is number taken + n. */
  private queued = 0;
  private taken = 0;
  /** Told of each unaligned barrier as it is queued, with the number the next queued element gets. */
  onUnalignedBarrier: ((b: BarrierElement, seq: number) => void) | undefined;
  /** Told of each element queued in the ordinary lane, with its number (an unaligned checkpoint's capture). */
  tap: ((e: StreamElement, seq: number) => void) | undefined;
  /** Told when an unaligned barrier is queued (a task waiting for room downstream takes it meanwhile). */
  onPriority: (() => void) | undefined;
  /**
   * The most records a batch sent here should hold, set by the consumer (buffer debloating, debloat.ts)
   * and read by senders as they start a batch; 0: no limit.
   */
  batchLimit: number;

  constructor(
    readonly capacity: number,
    /** The batch limit to start with (runtime/debloat.ts initialBatchLimit); 0: none. */
    batchLimit = 0,
  ) {
    this.batchLimit = batchLimit;
  }

  get isFull(): boolean {
    return this.batches >= this.capacity;
  }

  push(e: StreamElement): void {
    if (this.failure !== undefined) return;
    if (e.kind === BARRIER && e.unaligned) {
      this.priority.push(e);
      this.onUnalignedBarrier?.(e, this.queued);
      this.onPriority?.();
    } else {
      this.tap?.(e, this.queued);
      this.queued++;
      this.buf.push(e);
    }
    if (e.kind === BATCH && ++this.batches > this.highWaterBatches) this.highWaterBatches = this.batches;
    this.wakeConsumer();
  }

  /** An unaligned barrier that stands for no channel's (an aligned checkpoint converted): the task's turn to take it. */
  pushTurn(b: BarrierElement): void {
    if (this.failure !== undefined) return;
    this.priority.push(b);
    this.onPriority?.();
    this.wakeConsumer();
  }

  get hasPriority(): boolean {
    return this.priority.length > 0;
  }

  /** The next unaligned barrier, if one is queued. */
  pollPriority(): BarrierElement | undefined {
    return this.priority.length > 0 ? this.priority.shift() : undefined;
  }

  poll(): StreamElement | undefined {
    if (this.priority.length > 0) return this.priority.shift();
    if (this.head >= this.buf.length) return undefined;
    const e = this.buf[this.head]!;
    this.buf[this.head++] = undefined;
    this.taken++;
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

  /** Each element queued and not yet taken, in order, with its number. */
  forEachQueued(fn: (e: StreamElement, seq: number) => void): void {
    for (let i = this.head; i < this.buf.length; i++) fn(this.buf[i]!, this.taken + i - this.head);
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
      get batchLimit() {
        return q.batchLimit;
      },
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

  private wakeConsumer(): void {
    const c = this.consumer;
    if (!c) return;
    this.consumer = null;
    c.resolve();
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
    this.priority = [];
    this.tap = undefined;
    this.onPriority = undefined;
    this.consumer?.reject(err);
    this.consumer = null;
    for (const p of this.producers) p.reject(err);
    this.producers = [];
  }
}
