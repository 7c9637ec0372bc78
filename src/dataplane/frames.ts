/** Stream elements as data-plane frames, and back. */
import { BARRIER, BATCH, END, STATUS, WATERMARK, type StreamElement } from '../runtime/index.js';
import {
  decodeRecordBatch,
  encodeFrame,
  encodeRecordBatch,
  FRAME_HEADER_BYTES,
  makeMessage,
  MessageKind,
  type Message,
} from '../protocol/index.js';

/** A DataBatch frame's bytes before its batch: the frame length, the kind, the batch's length. */
const DATA_BATCH_HEAD = FRAME_HEADER_BYTES + 1 + 4;

/** What the receiver of a channel reads besides msgpack batches (it says so in every DataCredit). */
export interface BatchReads {
  /** Columnar batches. */
  columns: boolean;
  /** One timestamp for a whole batch, and constant columns. */
  constants: boolean;
  /** Columnar batches of arrays (a pre-aggregation's partials). */
  tuples: boolean;
}

/** What a receiver from before columns reads: msgpack, a timestamp per record. */
export const MSGPACK_ONLY: BatchReads = { columns: false, constants: false, tuples: false };

/** A DataBatch frame, the batch encoded in place after its header (as encodeFrame would lay it out, without copying the batch). */
export function batchFrame(values: readonly unknown[], timestamps: readonly number[], reads: BatchReads): Buffer {
  const frame = encodeRecordBatch(values, timestamps, {
    columns: reads.columns,
    constants: reads.constants,
    tuples: reads.tuples,
    prefix: DATA_BATCH_HEAD,
  });
  frame.writeUInt32BE(frame.length - FRAME_HEADER_BYTES, 0);
  frame.writeUInt8(MessageKind.DataBatch, FRAME_HEADER_BYTES);
  frame.writeUInt32BE(frame.length - DATA_BATCH_HEAD, FRAME_HEADER_BYTES + 1);
  return frame;
}

/** A stream element as a frame; batches in what the receiver reads. */
export function elementFrame(e: StreamElement, reads: BatchReads = MSGPACK_ONLY): Buffer {
  switch (e.kind) {
    case BATCH:
      return batchFrame(e.values, e.timestamps, reads);
    case WATERMARK:
      return encodeFrame(makeMessage('DataWatermark', { timestamp: e.timestamp }));
    case STATUS:
      return encodeFrame(makeMessage('DataStatus', { idle: e.idle }));
    case END:
      return encodeFrame(makeMessage('DataEnd', {}));
    case BARRIER:
      return encodeFrame(
        makeMessage('DataBarrier', {
          checkpointId: e.checkpointId,
          unaligned: e.unaligned === true,
          overtaken: e.overtaken ?? 0,
        }),
      );
  }
}

/** The stream element a data frame carries, on `channel`; undefined for a frame that is not data. */
export function frameElement(m: Message, channel: number): StreamElement | undefined {
  switch (m.type) {
    case 'DataBatch': {
      const { values, timestamps } = decodeRecordBatch(m.batch);
      // onTaken in the literal (inbound.ts sets it): the same hidden class as a local batch's, kept by the literal.
      return { kind: BATCH, channel, values, timestamps, onTaken: undefined };
    }
    case 'DataWatermark':
      return { kind: WATERMARK, channel, timestamp: m.timestamp };
    case 'DataStatus':
      return { kind: STATUS, channel, idle: m.idle };
    case 'DataEnd':
      return { kind: END, channel };
    case 'DataBarrier':
      return m.unaligned
        ? { kind: BARRIER, channel, checkpointId: m.checkpointId, unaligned: true, overtaken: m.overtaken }
        : { kind: BARRIER, channel, checkpointId: m.checkpointId };
    default:
      return undefined;
  }
}
