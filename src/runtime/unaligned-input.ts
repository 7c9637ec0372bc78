/**
 * UnalignedInput: a task's side of unaligned checkpoints. Each unaligned barrier is seen twice: as it
 * is queued (its place among its channel's elements is fixed then, see InflightCapture) and when the
 * task takes it, ahead of everything queued; the first of a checkpoint's barriers taken starts the
 * capture, and the task snapshots at once. A barrier of a newer checkpoint gives up the capture of an
 * older one (it was given up upstream), as an abort does; barriers of a settled checkpoint are dropped.
 *
 * Adaptive alignment converts an aligned checkpoint in place (convert): the task snapshots at its next
 * turn, as if an unaligned barrier had come, and what its channels still owe before their barriers is
 * in flight; the channels whose barrier its alignment already took owe nothing.
 */
import { BARRIER, type BarrierElement, type StreamElement } from './elements.js';
import { InflightCapture } from './inflight.js';
import type { InputQueue } from './queue.js';

export class UnalignedInput {
  private capture: InflightCapture | undefined;
  /** The newest checkpoint completed, cancelled or aborted here. */
  private settled = 0;

  constructor(
    private readonly queue: InputQueue,
    /** Which operator input each channel feeds, and which channels have ended (the task's, read live). */
    private readonly channels: { readonly inputs: readonly number[]; readonly ended: readonly boolean[] },
    private readonly onCancelled: (checkpointId: number, by: number) => void,
  ) {
    queue.onUnalignedBarrier = (b, seq) => this.queued(b, seq);
  }

  private queued(b: BarrierElement, seq: number): void {
    this.captureOf(b.checkpointId)?.barrier(b.channel, seq, b.overtaken ?? 0);
  }

  /**
   * The capture of checkpoint `id`, begun here if there is none (giving up an older checkpoint's);
   * undefined when `id` is settled or older than the capture in progress.
   */
  private captureOf(id: number): InflightCapture | undefined {
    if (id <= this.settled) return undefined;
    const c = this.capture;
    if (c && id < c.checkpointId) return undefined;
    if (c && id > c.checkpointId) {
      this.cancel();
      this.onCancelled(c.checkpointId, id);
    }
    return (this.capture ??= new InflightCapture(id, this.channels.ended, this.channels.inputs));
  }

  /**
   * Barrier `b` is taken: the capture to snapshot with when it is the first of its checkpoint, else
   * undefined. `unprocessed`: elements taken from the queue but not processed yet (an alignment's).
   */
  begin(
    b: BarrierElement,
    unprocessed: readonly StreamElement[],
    /** The channels whose barrier of this checkpoint an alignment took before it became unaligned. */
    delivered: readonly number[],
  ): InflightCapture | undefined {
    const c = this.capture;
    if (!c || c.checkpointId !== b.checkpointId || c.started) return undefined;
    for (const channel of delivered) c.delivered(channel);
    // What was taken from the queue earlier precedes everything in it, on every channel.
    for (const e of unprocessed) c.take(e, -1);
    this.queue.forEachQueued((e, seq) => c.take(e, seq));
    c.scanned();
    if (!c.complete) this.queue.tap = (e, seq) => c.take(e, seq);
    void c.whenComplete().then(() => {
      if (this.capture !== c) return;
      this.queue.tap = undefined;
      this.settle(c.checkpointId);
    });
    return c;
  }

  /**
   * Aligned checkpoint `checkpointId` (not yet taken here) becomes unaligned: the task takes it at its
   * next turn, through a barrier of the priority lane that stands for no channel's.
   */
  convert(checkpointId: number): void {
    // A capture of this checkpoint already begun means an unaligned barrier of it is queued.
    if (this.capture?.checkpointId === checkpointId || !this.captureOf(checkpointId)) return;
    this.queue.pushTurn({ kind: BARRIER, channel: -1, checkpointId, unaligned: true });
  }

  /** Checkpoint `checkpointId` was aborted: a capture of it (or an older one) stops. */
  abort(checkpointId: number): void {
    if (this.capture && this.capture.checkpointId <= checkpointId) this.cancel();
    this.settle(checkpointId);
  }

  private cancel(): void {
    const c = this.capture!;
    c.cancelled = true;
    this.queue.tap = undefined;
    this.settle(c.checkpointId);
  }

  private settle(checkpointId: number): void {
    this.settled = Math.max(this.settled, checkpointId);
    if (this.capture && this.capture.checkpointId <= this.settled) this.capture = undefined;
  }
}
