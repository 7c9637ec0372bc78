/**
 * RecordWriter: the tail of a task. It partitions records over each output edge (FORWARD, HASH by key
 * group, REBALANCE, BROADCAST), buffers them per target into batches, and hands full batches to the
 * targets' input queues. Watermarks and status go to every target.
 */
import { UserCodeError } from '../errors.js';
import { keyGroupOf, normalizeKey, operatorIndexForKeyGroup, type EdgeKind, type OperatorSpec } from '../plan/index.js';
import { BARRIER, BATCH, END, NO_TIMESTAMP, STATUS, WATERMARK } from './elements.js';
import type { Output } from './operator.js';
import type { ChannelSink } from './subtask.js';

export interface ChannelTarget {
  queue: ChannelSink;
  /** This writer's channel number at that queue. */
  channel: number;
}

export interface EdgeOutput {
  kind: EdgeKind;
  targets: ChannelTarget[];
  keySelector?: (value: unknown) => unknown;
  /** The keyed operator the edge feeds (for error messages). */
  target: OperatorSpec;
  maxParallelism: number;
  /** The side output the edge carries; absent: the main output. */
  output?: string;
  /** The edge's index in the job graph (a hot rescale retargets an edge by it). */
  edgeIndex?: number;
}

/** The records a batch to `sink` holds: the batch size, or less as its receiver asks (buffer debloating). */
function batchSizeTo(sink: ChannelSink, batchSize: number): number {
  const limit = sink.batchLimit;
  return limit !== undefined && limit > 0 && limit < batchSize ? limit : batchSize;
}

class EdgeWriter {
  private readonly values: unknown[][];
  private readonly timestamps: number[][];
  /** When each target's buffer got its first record (the writer's clock; 0 = empty). */
  private readonly since: number[];
  /** Per target, the size its batch under way is sent at: the batch size, or less as its receiver asks (debloat.ts). */
  private readonly limits: number[];
  private next: number;
  clock = 0;
  /** The last watermark announced, and which targets are owed it: it goes ahead of their next batch. */
  private watermark = NO_TIMESTAMP;
  private readonly owed: boolean[];
  /** The last number or string key hashed and its target: a run of one key is hashed once (KeyedStateBackend.setCurrentKey). */
  private lastKey: unknown = undefined;
  private lastTarget = 0;

  constructor(
    readonly e: EdgeOutput,
    private readonly batchSize: number,
    subtaskIndex: number,
    private readonly parallelism: number,
  ) {
    this.values = e.targets.map(() => []);
    this.timestamps = e.targets.map(() => []);
    this.since = e.targets.map(() => 0);
    this.limits = e.targets.map(() => batchSize);
    this.owed = e.targets.map(() => false);
    this.next = subtaskIndex % e.targets.length;
  }

  collect(value: unknown, timestamp: number, subtaskIndex: number): void {
    const e = this.e;
    switch (e.kind) {
      case 'FORWARD':
        this.add(subtaskIndex, value, timestamp);
        return;
      case 'HASH': {
        let key: unknown;
        try {
          key = e.keySelector!(value);
        } catch (err) {
          throw new UserCodeError(
            { ...e.target, name: `${e.target.name} (keyBy)` },
            subtaskIndex,
            this.parallelism,
            err,
          );
        }
        const t = typeof key;
        if ((t === 'number' || t === 'string') && Object.is(key, this.lastKey)) {
          this.add(this.lastTarget, value, timestamp);
          return;
        }
        const target = operatorIndexForKeyGroup(
          keyGroupOf(normalizeKey(key), e.maxParallelism),
          e.targets.length,
          e.maxParallelism,
        );
        this.lastKey = key;
        this.lastTarget = target;
        this.add(target, value, timestamp);
        return;
      }
      case 'REBALANCE': {
        const i = this.next;
        this.next = i + 1 === e.targets.length ? 0 : i + 1;
        this.add(i, value, timestamp);
        return;
      }
      case 'BROADCAST':
        for (let i = 0; i < e.targets.length; i++) this.add(i, value, timestamp);
        return;
    }
  }

  private add(i: number, value: unknown, timestamp: number): void {
    const vs = this.values[i]!;
    if (vs.length === 0) {
      this.since[i] = this.clock;
      // Read once a batch, not a record: a receiver's limit changes a few times a second at most.
      this.limits[i] = batchSizeTo(this.e.targets[i]!.queue, this.batchSize);
    }
    vs.push(value);
    this.timestamps[i]!.push(timestamp);
    if (vs.length >= this.limits[i]!) this.send(i);
  }

  private send(i: number): void {
    if (this.owed[i]) this.sendWatermark(i);
    const t = this.e.targets[i]!;
    t.queue.push({
      kind: BATCH,
      channel: t.channel,
      values: this.values[i]!,
      timestamps: this.timestamps[i]!,
      onTaken: undefined,
    });
    this.values[i] = [];
    this.timestamps[i] = [];
  }

  private sendWatermark(i: number): void {
    this.owed[i] = false;
    const t = this.e.targets[i]!;
    t.queue.push({ kind: WATERMARK, channel: t.channel, timestamp: this.watermark });
  }

  /**
   * Records before a watermark go now; the watermark itself is owed to every target and goes ahead of
   * its next batch, or when the task waits. A watermark owed to a target still owed an earlier one
   * replaces it: between the two there is nothing it could have told apart.
   */
  announceWatermark(watermark: number): void {
    for (let i = 0; i < this.values.length; i++) if (this.values[i]!.length > 0) this.send(i);
    this.watermark = watermark;
    this.owed.fill(true);
  }

  /** Send the watermarks owed (a buffered batch holds only records after its target's). */
  flushWatermarks(): void {
    for (let i = 0; i < this.owed.length; i++) if (this.owed[i]) this.sendWatermark(i);
  }

  /** Send every owed watermark and every partly filled batch behind it. */
  flush(): void {
    this.flushWatermarks();
    for (let i = 0; i < this.values.length; i++) if (this.values[i]!.length > 0) this.send(i);
  }

  /** Send buffers that have waited `lingerMs`; return when the next one falls due (Infinity: none). */
  flushDue(now: number, lingerMs: number): number {
    let next = Infinity;
    for (let i = 0; i < this.values.length; i++) {
      if (this.values[i]!.length === 0) continue;
      const due = this.since[i]! + lingerMs;
      if (due <= now) this.send(i);
      else if (due < next) next = due;
    }
    return next;
  }
}

export class RecordWriter implements Output {
  private edges: EdgeWriter[];
  /** The main output's edges, and the one when there is one (the common case, without a loop). */
  private main: EdgeWriter[] = [];
  private single: EdgeWriter | undefined;
  private sides = new Map<string, EdgeWriter[]>();
  private queues: ChannelSink[] = [];
  recordsOut = 0;
  /** The last watermark emitted (NO_TIMESTAMP until one is). */
  watermark = NO_TIMESTAMP;

  private lingerTimerAt = Infinity;
  /** The checkpoint adaptive alignment last converted: its barriers leave unaligned. */
  private converted = 0;

  constructor(
    edges: EdgeOutput[],
    private readonly batchSize: number,
    private readonly subtaskIndex: number,
    private readonly parallelism: number,
    /** How long a partly filled batch may wait to fill before it is sent. 0: until its task waits or yields. */
    private readonly lingerMs = 0,
    /** Schedules the send of a lingering batch (a task's processing-time service). */
    private readonly schedule?: (at: number, cb: () => void) => void,
  ) {
    this.edges = edges.map((e) => new EdgeWriter(e, batchSize, subtaskIndex, parallelism));
    this.wire();
  }

  private wire(): void {
    this.main = this.edges.filter((w) => w.e.output === undefined);
    this.sides = new Map();
    for (const w of this.edges)
      if (w.e.output !== undefined)
        (this.sides.get(w.e.output) ?? this.sides.set(w.e.output, []).get(w.e.output)!).push(w);
    this.single = this.main.length === 1 ? this.main[0] : undefined;
    this.queues = [...new Set(this.edges.flatMap((w) => w.e.targets.map((t) => t.queue)))];
  }

  /**
   * A hot rescale: edge `edgeIndex` sends to `targets` from now on (partitioned over their number);
   * returns the targets it sent to, whose channels the caller closes. Only between batches, flushed.
   */
  retarget(edgeIndex: number, targets: ChannelTarget[]): ChannelTarget[] {
    const i = this.edges.findIndex((w) => w.e.edgeIndex === edgeIndex);
    if (i < 0) throw new Error(`this subtask has no output edge ${edgeIndex}`);
    const old = this.edges[i]!;
    old.flush();
    this.edges[i] = new EdgeWriter({ ...old.e, targets }, this.batchSize, this.subtaskIndex, this.parallelism);
    this.wire();
    return old.e.targets;
  }

  collect(value: unknown, timestamp: number): void {
    this.recordsOut++;
    if (this.single !== undefined) {
      this.single.collect(value, timestamp, this.subtaskIndex);
      return;
    }
    for (const e of this.main) e.collect(value, timestamp, this.subtaskIndex);
  }

  collectSide(output: string, value: unknown, timestamp: number): void {
    const edges = this.sides.get(output);
    if (!edges) return;
    this.recordsOut++;
    for (const e of edges) e.collect(value, timestamp, this.subtaskIndex);
  }

  /** Records before it are sent now; the watermark when the task next waits or sends (EdgeWriter.announceWatermark). */
  emitWatermark(watermark: number): void {
    this.watermark = watermark;
    for (const e of this.edges) e.announceWatermark(watermark);
  }

  emitStatus(idle: boolean): void {
    this.flush();
    for (const e of this.edges) for (const t of e.e.targets) t.queue.push({ kind: STATUS, channel: t.channel, idle });
  }

  /** Send every partly filled batch now. */
  flush(): void {
    for (const e of this.edges) e.flush();
  }

  /**
   * After an input batch. With a linger: send what has lingered long enough and arm the timer for the
   * rest. Without one, nothing: a partly filled batch goes on filling while its task runs, and leaves
   * when the task waits or yields (flushPartial). Sent after every input batch instead, a shuffle's
   * batches left a few hundred records at a time, and a frame cost more than the records in it.
   */
  batchEnded(): void {
    if (this.lingerMs > 0 && this.schedule) this.flushPartial();
  }

  /**
   * The task is about to wait or yield: send owed watermarks, and partly filled batches that have
   * lingered long enough (all of them when the linger is 0); a timer sends the rest by their deadline.
   */
  flushPartial(): void {
    if (this.lingerMs <= 0 || !this.schedule) {
      this.flush();
      return;
    }
    const now = Date.now();
    let next = Infinity;
    for (const e of this.edges) {
      e.clock = now;
      next = Math.min(next, e.flushDue(now, this.lingerMs));
      e.flushWatermarks();
    }
    if (next < this.lingerTimerAt) {
      this.lingerTimerAt = next;
      this.schedule(next, () => {
        this.lingerTimerAt = Infinity;
        this.flushPartial();
      });
    }
  }

  /**
   * A checkpoint barrier goes to every target, after every record sent before it; an unaligned one
   * overtakes them on the way (a queue takes it first, a remote channel sends it ahead of what waits).
   */
  emitBarrier(checkpointId: number, unaligned = false): void {
    this.flush();
    // Converted before its barrier left (its snapshot was under way): it overtakes all the same.
    if (checkpointId === this.converted) unaligned = true;
    for (const e of this.edges)
      for (const t of e.e.targets)
        t.queue.push(
          unaligned
            ? { kind: BARRIER, channel: t.channel, checkpointId, unaligned }
            : { kind: BARRIER, channel: t.channel, checkpointId },
        );
  }

  /**
   * Aligned checkpoint `checkpointId` became unaligned (adaptive alignment): a barrier of it waiting for
   * credit goes ahead of what it waits behind, and one not yet sent goes so. A barrier already in a
   * queue of this process is the receiving task's to take ahead (UnalignedInput.convert).
   */
  convertBarrier(checkpointId: number): void {
    this.converted = checkpointId;
    for (const q of this.queues) q.overtakeWith?.(checkpointId);
  }

  end(): void {
    this.flush();
    for (const e of this.edges) for (const t of e.e.targets) t.queue.push({ kind: END, channel: t.channel });
  }

  /**
   * While some receiver asks for smaller batches (buffer debloating): the records that fill one batch
   * to each target of an edge, at the least of the edges (every record goes to each); else Infinity. A
   * source reads no more at a time, so it overshoots the room its receivers have by a batch at most.
   */
  get debloatedRead(): number {
    let least = Infinity;
    for (const e of this.edges) {
      let sum = 0;
      let limited = false;
      for (const t of e.e.targets) {
        const size = batchSizeTo(t.queue, this.batchSize);
        if (size < this.batchSize) limited = true;
        sum += size;
      }
      if (limited && sum < least) least = sum;
    }
    return least;
  }

  /** True when some target has no room: the task must wait before producing more. */
  get mustWait(): boolean {
    for (const q of this.queues) if (q.isFull) return true;
    return false;
  }

  async awaitCapacity(): Promise<void> {
    for (const q of this.queues) while (q.isFull) await q.waitNotFull();
  }
}
