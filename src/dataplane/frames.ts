/** Stream elements as data-plane frames, and back. */
import { BARRIER, BATCH, END, STATUS, WATERMARK, type StreamElement } from '../runtime/index.js';
import { decodeRecordBatch, encodeFrame, encodeRecordBatch, makeMessage, type Message } from '../protocol/index.js';

export function elementFrame(e: StreamElement): Buffer {
  switch (e.kind) {
    case BATCH:
      return encodeFrame(makeMessage('DataBatch', { batch: encodeRecordBatch(e.values, e.timestamps) }));
    case WATERMARK:
      return encodeFrame(makeMessage('DataWatermark', { timestamp: e.timestamp }));
    case STATUS:
      return encodeFrame(makeMessage('DataStatus', { idle: e.idle }));
    case END:
      return encodeFrame(makeMessage('DataEnd', {}));
    case BARRIER:
      return encodeFrame(makeMessage('DataBarrier', { checkpointId: e.checkpointId }));
  }
}

/** The stream element a data frame carries, on `channel`; undefined for a frame that is not data. */
export function frameElement(m: Message, channel: number): StreamElement | undefined {
  switch (m.type) {
    case 'DataBatch': {
      const { values, timestamps } = decodeRecordBatch(m.batch);
      return { kind: BATCH, channel, values, timestamps };
    }
    case 'DataWatermark':
      return { kind: WATERMARK, channel, timestamp: m.timestamp };
    case 'DataStatus':
      return { kind: STATUS, channel, idle: m.idle };
    case 'DataEnd':
      return { kind: END, channel };
    case 'DataBarrier':
      return { kind: BARRIER, channel, checkpointId: m.checkpointId };
    default:
      return undefined;
  }
}
