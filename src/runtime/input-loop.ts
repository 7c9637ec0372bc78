/**
 * InputLoop: the loop of a task with inputs. It takes elements from its InputQueue (fed by every
 * upstream channel) and pushes batches through the head of its chain in slices; it aligns the barriers
 * of aligned checkpoints (aligner.ts) and takes unaligned ones ahead of what is queued
 * (unaligned-input.ts); after a restore it replays the records that were in flight first; with buffer
 * debloating it sets the batch size its senders use (debloat.ts).
 */
import { BarrierAligner, type AlignerEvent } from './aligner.js';
import { Debloater, nextReadSize } from './debloat.js';
import { BARRIER, BATCH, END, STATUS, WATERMARK, type BarrierElement, type RecordBatch } from './elements.js';
import { InputWatermarks } from './input-watermarks.js';
import { SubtaskPhase } from './phase.js';
import type { InputQueue } from './queue.js';
import { replayInflight } from './rescale.js';
import type { LoopHost, TaskLoop } from './task-loop.js';
import { UnalignedInput } from './unaligned-input.js';

export class InputLoop implements TaskLoop {
  recordsIn = 0;
  private readonly queue: InputQueue;
  /** Per channel, which operator input it feeds; the channels not ended; event time. Growable (hot rescale). */
  private readonly channels: { inputs: number[]; ended: boolean[]; open: number; time: InputWatermarks };
  /** Aligned checkpoints: a channel that delivered the barrier is held back until every open one has. */
  private readonly aligner: BarrierAligner;
  /** Unaligned checkpoints: the barrier is taken ahead of what is queued. */
  private readonly unalignedInput: UnalignedInput;
  /** Records a slice of a batch may hold (processBatch): as many as take about SLICE_TARGET_MS. */
  private sliceSize = Number.MAX_SAFE_INTEGER;
  /** The batch being processed in slices, and where its unprocessed rest begins. */
  private unprocessedRest: { batch: RecordBatch; from: number } | undefined;
  /** Restored in-flight records not yet replayed: ahead of everything queued, on every channel. */
  private replaying: RecordBatch[] = [];

  constructor(private readonly host: LoopHost) {
    const { setup } = host;
    const { queue, channelInputs } = setup.input!;
    this.queue = queue;
    const ch = (this.channels = {
      inputs: [...channelInputs],
      ended: channelInputs.map(() => false),
      open: channelInputs.length,
      time: new InputWatermarks(channelInputs.length, setup.operators[0]!),
    });
    // A held batch's credit goes back only when it is processed, so a remote channel that is held stops
    // sending once its credits are spent; a local one stops when a queue's worth of its batches is held
    // (InputQueue.channel).
    this.aligner = new BarrierAligner(ch.inputs.length, undefined, (e, held) => {
      if (e.kind !== BATCH) return;
      if (held) queue.hold(e.channel);
      else queue.release(e.channel);
    });
    this.unalignedInput = new UnalignedInput(queue, ch, (id, by) => setup.onAlignmentCancelled?.(id, by));
    // An unaligned barrier that comes while the task waits for room downstream is taken then.
    queue.onPriority = () => host.wake();
  }

  /** A hot rescale's new input channels (their operator inputs), numbered after the existing ones. */
  addChannels(inputs: readonly number[]): void {
    const ch = this.channels;
    ch.inputs.push(...inputs);
    for (let i = 0; i < inputs.length; i++) ch.ended.push(false);
    ch.time.addChannels(inputs.length);
    ch.open += inputs.length;
    this.aligner.addChannels(inputs.length);
  }

  get barrierWaiting(): boolean {
    return this.queue.hasPriority;
  }

  /** Take the unaligned barriers queued. */
  async takeBarriers(): Promise<void> {
    for (let e = this.queue.pollPriority(); e !== undefined; e = this.queue.pollPriority()) await this.takeUnaligned(e);
  }

  convert(checkpointId: number): void {
    this.unalignedInput.convert(checkpointId);
  }

  /** An alignment of it stops (releasing what it held), and so does a capture of it. */
  abort(checkpointId: number): void {
    this.aligner.abort(checkpointId);
    this.unalignedInput.abort(checkpointId);
  }

  /** An unaligned barrier, never held by an alignment: the first of its checkpoint starts the capture and snapshot. */
  private async takeUnaligned(e: BarrierElement): Promise<void> {
    const rest = this.unprocessedRest;
    // The rest of a batch under way came before what is left to replay, and that before anything the
    // queue or an alignment holds.
    const unprocessed = [
      ...(rest
        ? [
            {
              ...rest.batch,
              values: rest.batch.values.slice(rest.from),
              timestamps: rest.batch.timestamps.slice(rest.from),
            },
          ]
        : []),
      ...this.replaying,
      ...this.aligner.unprocessed(),
    ];
    // An alignment of it under way (adaptive alignment converted it): its channels owe nothing more,
    // and what it held comes after the snapshot.
    const aligned = this.aligner.delivered(e.checkpointId);
    const capture = this.unalignedInput.begin(e, unprocessed, aligned?.channels ?? []);
    if (!capture) return;
    this.aligner.abort(e.checkpointId);
    await this.host.checkpoint(e.checkpointId, { capture, alignmentMs: aligned?.alignmentMs ?? 0 });
  }

  /** Records `from` to `to` for the head operator's input `input` (0: its first, else its second). */
  private processRecords(
    input: number,
    values: readonly unknown[],
    timestamps: readonly number[],
    from: number,
    to: number,
  ): void {
    const head = this.host.setup.operators[0]!;
    this.recordsIn += to - from;
    if (input === 0) for (let i = from; i < to; i++) head.processElement(values[i], timestamps[i]!);
    else for (let i = from; i < to; i++) head.processElement2(values[i], timestamps[i]!);
  }

  /**
   * A batch from a channel, in slices of what the task gets through in about SLICE_TARGET_MS
   * when its records are slow; between slices it gives way (afterBatch), so an unaligned barrier that
   * comes meanwhile overtakes the rest of the batch (written with the checkpoint as in flight), and the
   * thread's other tasks run. A fast task's batch is one slice: two clock reads a batch.
   */
  private async processBatch(input: number, e: RecordBatch): Promise<void> {
    const { now } = this.host.setup;
    const { values, timestamps } = e;
    const n = values.length;
    for (let from = 0; from < n;) {
      const to = Math.min(n, from + this.sliceSize);
      const startedAt = now();
      this.processRecords(input, values, timestamps, from, to);
      this.sliceSize = nextReadSize(this.sliceSize, Number.MAX_SAFE_INTEGER, to - from, now() - startedAt);
      from = to;
      if (from === n) return;
      this.unprocessedRest = { batch: e, from };
      try {
        await this.host.afterBatch();
        await this.takeBarriers();
      } finally {
        this.unprocessedRest = undefined;
      }
    }
  }

  /**
   * What was in flight at the checkpoint restored goes through first, as it would have. An unaligned
   * barrier that comes meanwhile overtakes what is left of it (in flight again, for its checkpoint): at
   * a slow stage it is seconds of work, longer than a checkpoint may take.
   */
  private async replay(): Promise<void> {
    const { host } = this;
    const { inputs } = this.channels;
    this.replaying = replayInflight(host.setup.restore!, host.setup).map(({ input, values, timestamps }) => {
      // As if it came on a channel feeding its input (the capture of a checkpoint taken meanwhile reads it so).
      const channel = inputs.indexOf(input);
      if (channel < 0) throw new Error(`records in flight were restored for input ${input}, which no channel feeds`);
      return { kind: BATCH, channel, values, timestamps };
    });
    for (let e = this.replaying.shift(); e !== undefined; e = this.replaying.shift()) {
      host.setup.onPhase?.(SubtaskPhase.PROCESSING);
      await this.processBatch(inputs[e.channel]!, e);
      await host.afterBatch();
      await this.takeBarriers();
    }
  }

  async run(): Promise<void> {
    const { host, queue, aligner, channels: ch } = this;
    const { setup, idle } = host;
    const { inputs, ended, time } = ch;
    const onAlignment = async (ev: AlignerEvent): Promise<void> => {
      if (ev.kind === 'complete') await host.checkpoint(ev.checkpointId, { alignmentMs: ev.alignmentMs });
      else if (ev.kind === 'cancelled') setup.onAlignmentCancelled?.(ev.checkpointId, ev.by);
    };
    const debloatMs = setup.debloatTargetMs ?? 0;
    const debloater =
      debloatMs > 0 ? new Debloater(debloatMs, queue.capacity, setup.batchSize, setup.now(), idle.totalMs) : undefined;
    if (setup.restore) await this.replay();

    while (ch.open > 0) {
      // An unaligned barrier goes before what an alignment released, as before what is queued.
      let e = queue.pollPriority() ?? aligner.nextReplayed() ?? queue.poll();
      if (e === undefined) {
        host.beforeWait();
        setup.onPhase?.(SubtaskPhase.IDLE);
        idle.begin();
        try {
          e = await queue.take();
        } finally {
          idle.end();
        }
      }
      // Never held by an alignment: it overtakes, whatever channel it came on.
      if (e.kind === BARRIER && e.unaligned) {
        await this.takeUnaligned(e);
        continue;
      }
      if (aligner.hold(e)) continue;
      switch (e.kind) {
        case BATCH: {
          e.onTaken?.();
          setup.onPhase?.(SubtaskPhase.PROCESSING);
          await this.processBatch(inputs[e.channel]!, e);
          if (debloater) {
            debloater.processed(e.values.length);
            queue.batchLimit = debloater.sample(setup.now(), idle.totalMs);
          }
          await host.afterBatch();
          break;
        }
        case WATERMARK:
          time.watermark(e.channel, e.timestamp);
          await host.afterBatch();
          break;
        case STATUS:
          time.status(e.channel, e.idle);
          await host.afterBatch();
          break;
        case END:
          ch.open--;
          ended[e.channel] = true;
          time.end(e.channel);
          await onAlignment(aligner.onEnd(e.channel));
          await host.afterBatch();
          break;
        case BARRIER:
          await onAlignment(aligner.onBarrier(e.channel, e.checkpointId));
          break;
      }
    }
  }
}
