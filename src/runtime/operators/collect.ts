/**
 * The `collect(name)` sink: gathers a subtask's records and hands them to the runtime when its input
 * ends (the worker ships them back with the subtask's end). What it gathered is checkpointed state, so
 * a job restored from a checkpoint ends with every record exactly once: the records before the
 * checkpoint come back from it, the sources replay the rest. Records are kept encoded, batch by batch,
 * so a checkpoint copies references and the size cap is checked as they come in, not at the end.
 */
import { ConnectorError, markFatal } from '../../errors.js';
import { recordsCodec } from '../../util/index.js';
import type { RescaledParts } from '../rescale.js';
import { SinkOperator } from './basic.js';

/** The most a subtask's collect() sinks may gather (they travel back in one frame). */
export const MAX_COLLECTED_BYTES = 64 * 1024 * 1024;

export class CollectSinkOperator extends SinkOperator {
  private batch: unknown[] = [];
  private chunks: Uint8Array[] = [];
  private bytes = 0;

  constructor(
    private readonly collectName: string,
    private readonly maxBytes = MAX_COLLECTED_BYTES,
  ) {
    super(() => ({
      write: (v) => void this.batch.push(v),
      flush: () => this.seal(),
      finish: () => this.handOver(),
    }));
  }

  override snapshotState(): unknown {
    this.seal();
    return this.chunks.length > 0 ? { chunks: [...this.chunks] } : undefined;
  }

  override restoreState(state: unknown): void {
    this.chunks = [...((state as { chunks?: Uint8Array[] } | undefined)?.chunks ?? [])];
    this.bytes = this.chunks.reduce((n, c) => n + c.length, 0);
  }

  /** Rescaled: the chunks of the subtasks taken over (each earlier subtask's go to exactly one). */
  override restoreRescaled(parts: RescaledParts): void {
    this.restoreState({
      chunks: parts.assigned.flatMap((s) => (s as { chunks?: Uint8Array[] } | undefined)?.chunks ?? []),
    });
  }

  /** Encode the records written since the last seal into a chunk of their own. */
  private seal(): void {
    if (this.batch.length === 0) return;
    const chunk = recordsCodec().pack(this.batch);
    this.batch = [];
    this.bytes += chunk.length;
    // Deterministic: a restart would gather the same records again, so the job fails rather than restarts.
    if (this.bytes > this.maxBytes) {
      throw markFatal(
        new ConnectorError(
          `collect('${this.collectName}') gathered more than ${this.maxBytes} bytes in one subtask (the cap on results returned to the client); write large results to a sink, e.g. .sinkTo('file', { path })`,
        ),
      );
    }
    this.chunks.push(chunk);
  }

  private handOver(): void {
    this.seal();
    for (const c of this.chunks) this.ctx.services.collect(this.collectName, recordsCodec().unpack(c) as unknown[]);
    this.chunks = [];
    this.bytes = 0;
  }
}
