/**
 * SourceLoop: a source task's loop. It reads batches from its connector's reader into the head of its
 * chain, as much as the chain gets through in about SLICE_TARGET_MS (debloat.ts nextReadSize)
 * and no more than its receivers ask for (buffer debloating), and injects the barriers of the
 * checkpoints asked of it between reads; at the end of its input it asks for the job's final checkpoint.
 */
import type { SourceOutput, SourceReader } from '../sdk/index.js';
import { nextReadSize } from './debloat.js';
import { MAX_WATERMARK, NO_TIMESTAMP } from './elements.js';
import { SubtaskPhase } from './phase.js';
import { isRescaled } from './rescale.js';
import type { LoopHost, TaskLoop } from './task-loop.js';

export class SourceLoop implements TaskLoop {
  recordsIn = 0;
  /** Checkpoints it must inject barriers for, after its current batch. */
  private readonly pendingBarriers: { id: number; unaligned: boolean }[] = [];
  private reader: SourceReader<unknown> | undefined;

  constructor(private readonly host: LoopHost) {}

  /** Its lag behind its input (SourceReader.lag), 0 when it cannot tell. */
  get lag(): number {
    return this.reader?.lag?.() ?? 0;
  }

  /** Its position now, for a snapshot. */
  position(): unknown {
    return this.reader?.snapshot?.();
  }

  /** A barrier of checkpoint `checkpointId` goes in after the current batch. */
  trigger(checkpointId: number, unaligned: boolean): void {
    this.pendingBarriers.push({ id: checkpointId, unaligned });
  }

  convert(checkpointId: number): void {
    for (const b of this.pendingBarriers) if (b.id === checkpointId) b.unaligned = true;
  }

  abort(): void {}

  get barrierWaiting(): boolean {
    return this.pendingBarriers.length > 0;
  }

  /** Its barriers for the checkpoints asked of it since its last batch, in order. */
  async takeBarriers(): Promise<void> {
    while (this.pendingBarriers.length > 0) {
      const { id, unaligned } = this.pendingBarriers.shift()!;
      await this.host.checkpoint(id, { unaligned });
    }
  }

  async run(): Promise<void> {
    const { host } = this;
    const { setup } = host;
    const head = setup.operators[0]!;
    const reader = await host.bounded(setup.createReader!());
    this.reader = reader;
    const restore = setup.restore;
    const position = restore && isRescaled(restore) ? await host.bounded(setup.rescaledPosition!()) : restore?.source;
    if (position !== undefined) await host.bounded(reader.restore?.(position));
    const next = head.out;
    let emittedWatermark = NO_TIMESTAMP;
    let sourceIdle = false;
    const out: SourceOutput<unknown> = {
      collect: (v) => {
        this.recordsIn++;
        next.collect(v, NO_TIMESTAMP);
      },
      collectWithTimestamp: (v, ts) => {
        this.recordsIn++;
        next.collect(v, ts);
      },
      emitWatermark: (wm) => {
        if (wm > emittedWatermark) head.processWatermark((emittedWatermark = wm));
      },
      markIdle: (idle) => {
        if (idle !== sourceIdle) head.processStatus((sourceIdle = idle));
      },
    };
    const { batchSize, now } = setup;
    const idle = host.idle;
    let readSize = batchSize;
    try {
      for (;;) {
        if (this.pendingBarriers.length > 0) await this.takeBarriers();
        setup.onPhase?.(SubtaskPhase.READING);
        const [readAt, idleAt, recordsAt] = [now(), idle.totalMs, this.recordsIn];
        let status = reader.read(out, Math.min(readSize, setup.writer.debloatedRead));
        if (typeof status !== 'string') {
          idle.begin();
          try {
            status = await host.bounded(status);
          } finally {
            idle.end();
          }
        }
        const busyMs = now() - readAt - (idle.totalMs - idleAt);
        readSize = nextReadSize(readSize, batchSize, this.recordsIn - recordsAt, busyMs);
        await host.afterBatch();
        if (status === 'END') break;
      }
      // A checkpoint asked for during the last batch still gets its barrier, before the end.
      await this.takeBarriers();
      if (setup.finalCheckpoint) {
        // Event time ends first, so every window fires ahead of the final barrier and is in its commit.
        head.processWatermark(MAX_WATERMARK);
        await host.checkpoint(await this.finalCheckpointId());
        return;
      }
    } finally {
      await host.bounded(reader.close?.());
    }
    head.processWatermark(MAX_WATERMARK);
  }

  /** Ask for the final checkpoint; until its id comes, keep sending the barriers of periodic ones. */
  private async finalCheckpointId(): Promise<number> {
    const assigned = this.host.setup.finalCheckpoint!();
    for (;;) {
      await this.takeBarriers();
      const id = await this.host.wakeable(assigned);
      if (id !== undefined) return id;
    }
  }
}
