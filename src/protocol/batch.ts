/**
 * The body of a data-plane record batch: [u32 count][u8 flags][f64 timestamp x count, if flag 1]
 * [msgpack array of count values]. Timestamps are sent raw only when some record has one. Values use
 * msgpackr records, the fastest general codec measured (shared/performance-notes.md).
 */
import { Packr, Unpackr } from 'msgpackr';
import { FrameDecodeError, MessageReader } from './wire.js';

const HAS_TIMESTAMPS = 1;
const packr = new Packr({ useRecords: true, moreTypes: true });
const unpackr = new Unpackr({ useRecords: true, moreTypes: true });

export interface EncodedBatch {
  values: unknown[];
  /** Event timestamps, -Infinity for a record without one. */
  timestamps: number[];
}

export function encodeRecordBatch(values: readonly unknown[], timestamps: readonly number[]): Buffer {
  const n = values.length;
  let stamped = false;
  for (let i = 0; i < n; i++) {
    if (timestamps[i] !== Number.NEGATIVE_INFINITY) {
      stamped = true;
      break;
    }
  }
  const packed = packr.pack(values);
  const out = Buffer.allocUnsafe(5 + (stamped ? 8 * n : 0) + packed.length);
  out.writeUInt32BE(n, 0);
  out.writeUInt8(stamped ? HAS_TIMESTAMPS : 0, 4);
  let at = 5;
  if (stamped) {
    for (let i = 0; i < n; i++, at += 8) out.writeDoubleBE(timestamps[i]!, at);
  }
  packed.copy(out, at);
  return out;
}

export function decodeRecordBatch(body: Uint8Array): EncodedBatch {
  const r = new MessageReader(body);
  const n = r.u32('batch count');
  const flags = r.u8('batch flags');
  if (flags > HAS_TIMESTAMPS) throw new FrameDecodeError(`batch flags ${flags} not understood`);
  const timestamps = new Array<number>(n);
  if (flags & HAS_TIMESTAMPS) {
    if (n * 8 > r.remaining) throw new FrameDecodeError(`batch of ${n} timestamps cannot fit in ${r.remaining} bytes`);
    for (let i = 0; i < n; i++) timestamps[i] = r.f64('timestamp');
  } else {
    if (n > r.remaining) throw new FrameDecodeError(`batch count ${n} cannot fit in ${r.remaining} bytes`);
    timestamps.fill(Number.NEGATIVE_INFINITY);
  }
  let values: unknown;
  try {
    values = unpackr.unpack(body.subarray(r.offset));
  } catch (err) {
    throw new FrameDecodeError(`batch values do not decode: ${(err as Error).message}`);
  }
  if (!Array.isArray(values) || values.length !== n) {
    throw new FrameDecodeError(`batch says ${n} records, its values hold ${Array.isArray(values) ? values.length : typeof values}`);
  }
  return { values, timestamps };
}
