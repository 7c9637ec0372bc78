/** What travels between tasks: batches of records and control elements, each tagged with its channel. */

/** The timestamp of a record that has none. Watermarks start here too. */
export const NO_TIMESTAMP = Number.NEGATIVE_INFINITY;
/** The watermark a finished input counts as: it holds nothing back. */
export const MAX_WATERMARK = Number.POSITIVE_INFINITY;

export const BATCH = 0;
export const WATERMARK = 1;
export const STATUS = 2;
export const END = 3;
export const BARRIER = 4;

export interface RecordBatch {
  kind: typeof BATCH;
  channel: number;
  values: unknown[];
  timestamps: number[];
  /** Called when the consuming task takes the batch (a remote channel returns a credit then). */
  onTaken?: () => void;
}

export interface WatermarkElement {
  kind: typeof WATERMARK;
  channel: number;
  timestamp: number;
}

/** An input going idle (excluded from the watermark minimum) or active again. */
export interface StatusElement {
  kind: typeof STATUS;
  channel: number;
  idle: boolean;
}

export interface EndElement {
  kind: typeof END;
  channel: number;
}

/** A checkpoint barrier: everything before it on this channel belongs to checkpoint `checkpointId`. */
export interface BarrierElement {
  kind: typeof BARRIER;
  channel: number;
  checkpointId: number;
  /** An unaligned checkpoint's: it overtakes what is queued ahead of it (runtime/inflight.ts). */
  unaligned?: boolean;
  /** Elements of this channel sent before the barrier that it overtook on the way, arriving after it. */
  overtaken?: number;
}

export type StreamElement = RecordBatch | WatermarkElement | StatusElement | EndElement | BarrierElement;
