/**
 * InflightCapture: the channel state of one unaligned checkpoint at a task with inputs (design record
 * 023). The first unaligned barrier of checkpoint N overtakes what is queued ahead of it; the task
 * snapshots at once, and the records it has not yet processed that came before N's barrier on their
 * channel are written with the checkpoint instead, and replayed on restore before anything new:
 *
 * - a channel whose barrier has not come: every record that arrives on it until its barrier does;
 * - a channel whose barrier came: the records queued before the barrier, and the `overtaken` elements
 *   after it (what the barrier overtook in the sender's output, still on their way);
 * - a channel that ended: what it delivered before its end;
 * - a channel whose barrier the task took aligned before the checkpoint became unaligned (adaptive
 *   alignment, design record 023): nothing (what came before that barrier was processed).
 *
 * A channel's barrier may also come aligned, in the ordinary lane (sent before the checkpoint became
 * unaligned): then the records queued before it on its channel are in flight.
 *
 * Records are encoded as they are taken in (a user function may change a record it is given), as
 * record batches with the operator input they feed. Elements other than records are not kept: a
 * restored job's sources send their watermarks again.
 *
 *   open ──barrier(seq, k)──► overtaken k ──k more elements──► done
 *     └──────────────────end──────────────────────────────────┘
 */
import { encodeRecordBatch } from '../protocol/index.js';
import { deferred } from '../util/index.js';
import { BARRIER, BATCH, END, type StreamElement } from './elements.js';

/** Records of one channel that were in flight at an unaligned checkpoint, as the operator input they feed. */
export interface InflightBatch {
  input: number;
  /** A record batch, as the data plane encodes one (protocol/batch.ts). */
  batch: Uint8Array;
}

const OPEN = -1;
const DONE = 0;

export class InflightCapture {
  /** Per channel: OPEN, DONE, or how many more elements after its barrier are in flight. */
  private readonly owed: number[];
  /** Per channel, the queue sequence number of its barrier (elements before it are in flight). */
  private readonly barrierAt: number[];
  private pendingChannels: number;
  readonly batches: InflightBatch[] = [];
  bytes = 0;
  /** The task has snapshotted: from now on elements are taken in as they are queued. */
  started = false;
  /** A newer barrier or an abort gave it up: nothing of it is reported. */
  cancelled = false;
  private readonly completed = deferred<void>();

  constructor(
    readonly checkpointId: number,
    ended: readonly boolean[],
    /** Which operator input each channel feeds. */
    private readonly inputs: readonly number[],
  ) {
    this.owed = ended.map((e) => (e ? DONE : OPEN));
    this.barrierAt = ended.map(() => Infinity);
    this.pendingChannels = this.owed.filter((o) => o === OPEN).length;
    if (this.pendingChannels === 0) this.completed.resolve();
  }

  /** Resolves once every channel's in-flight records are taken in. */
  whenComplete(): Promise<void> {
    return this.completed.promise;
  }

  get complete(): boolean {
    return this.pendingChannels === 0;
  }

  /** Channel `channel`'s barrier, queued as element `seq`, overtook `overtaken` elements still to come. */
  barrier(channel: number, seq: number, overtaken: number): void {
    if (this.owed[channel] !== OPEN) return;
    this.barrierAt[channel] = seq;
    if (this.started) this.settle(channel, overtaken);
    else this.owed[channel] = -2 - overtaken; // counted once the queue is scanned: see take()
  }

  /**
   * An element of the queue, in queue order: element `seq` (scanned at the snapshot, or queued after it).
   * Takes it in if it was in flight.
   */
  take(e: StreamElement, seq: number): void {
    const c = e.channel;
    const o = this.owed[c];
    if (o === undefined || o === DONE) return;
    if (o < OPEN) {
      // Barrier seen before the scan: elements before it are in flight, then `overtaken` more.
      if (seq < this.barrierAt[c]!) this.keep(e);
      else {
        this.settle(c, -2 - o);
        if (this.owed[c] !== DONE) this.take(e, seq);
      }
      return;
    }
    if (e.kind === END || (e.kind === BARRIER && e.checkpointId === this.checkpointId)) {
      this.finish(c);
      return;
    }
    this.keep(e);
    if (o === 1) this.finish(c);
    else if (o > 1) this.owed[c] = o - 1;
  }

  /** The task took channel `channel`'s barrier aligned, before the checkpoint became unaligned: nothing of it is in flight. */
  delivered(channel: number): void {
    if (this.owed[channel] === OPEN) this.finish(channel);
  }

  /** The scan at the snapshot is done: channels whose barrier came before it and left nothing behind it are settled. */
  scanned(): void {
    this.started = true;
    for (let c = 0; c < this.owed.length; c++) if (this.owed[c]! < OPEN) this.settle(c, -2 - this.owed[c]!);
  }

  private settle(channel: number, overtaken: number): void {
    if (overtaken === 0) this.finish(channel);
    else this.owed[channel] = overtaken;
  }

  private finish(channel: number): void {
    if (this.owed[channel] === DONE) return;
    this.owed[channel] = DONE;
    if (--this.pendingChannels === 0) this.completed.resolve();
  }

  private keep(e: StreamElement): void {
    if (e.kind !== BATCH) return;
    const batch = encodeRecordBatch(e.values, e.timestamps, { columns: true, constants: true, tuples: true });
    this.bytes += batch.length;
    this.batches.push({ input: this.inputs[e.channel] ?? 0, batch });
  }
}
