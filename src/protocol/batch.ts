/**
 * The body of a data-plane record batch: [u32 count][u8 flags][f64 timestamp x count, if flag 1]
 * [values]. Timestamps are sent raw only when some record has one. The values are a msgpack array of
 * count values (msgpackr records, the fastest general codec measured), or, with flag 2, columns
 * (columns.ts: plain objects of one field list, the shape records almost always have), which a sender
 * writes only to a receiver that said it reads them (DataCredit.columns).
 */
import { Packr, Unpackr } from 'msgpackr';
import { decodeColumns, encodeColumns } from './columns.js';
import { FrameDecodeError, MessageReader } from './wire.js';

const HAS_TIMESTAMPS = 1;
const COLUMNAR = 2;
const packr = new Packr({ useRecords: true, moreTypes: true });
const unpackr = new Unpackr({ useRecords: true, moreTypes: true });

export interface EncodedBatch {
  values: unknown[];
  /** Event timestamps, -Infinity for a record without one. */
  timestamps: number[];
}

export interface BatchEncoding {
  /** Write columns when the values allow (the receiver reads them). @default false */
  columns?: boolean;
  /** Bytes left free before the batch, for the caller's frame header (no copy to add one). @default 0 */
  prefix?: number;
}

export function encodeRecordBatch(values: readonly unknown[], timestamps: readonly number[], o: BatchEncoding = {}): Buffer {
  const n = values.length;
  let stamped = false;
  for (let i = 0; i < n; i++) {
    if (timestamps[i] !== Number.NEGATIVE_INFINITY) {
      stamped = true;
      break;
    }
  }
  const prefix = o.prefix ?? 0;
  const head = 5 + (stamped ? 8 * n : 0);
  let out = o.columns ? encodeColumns(values, prefix, head) : undefined;
  const flags = (stamped ? HAS_TIMESTAMPS : 0) | (out ? COLUMNAR : 0);
  if (!out) {
    const packed = packr.pack(values);
    out = Buffer.allocUnsafe(prefix + head + packed.length);
    packed.copy(out, prefix + head);
  }
  out.writeUInt32BE(n, prefix);
  out.writeUInt8(flags, prefix + 4);
  if (stamped) {
    for (let i = 0, at = prefix + 5; i < n; i++, at += 8) out.writeDoubleBE(timestamps[i]!, at);
  }
  return out;
}

export function decodeRecordBatch(body: Uint8Array): EncodedBatch {
  const r = new MessageReader(body);
  const n = r.u32('batch count');
  const flags = r.u8('batch flags');
  if (flags > (HAS_TIMESTAMPS | COLUMNAR)) throw new FrameDecodeError(`batch flags ${flags} not understood`);
  const timestamps = new Array<number>(n);
  if (flags & HAS_TIMESTAMPS) {
    if (n * 8 > r.remaining) throw new FrameDecodeError(`batch of ${n} timestamps cannot fit in ${r.remaining} bytes`);
    for (let i = 0; i < n; i++) timestamps[i] = r.f64('timestamp');
  } else {
    if (n > r.remaining) throw new FrameDecodeError(`batch count ${n} cannot fit in ${r.remaining} bytes`);
    timestamps.fill(Number.NEGATIVE_INFINITY);
  }
  if (flags & COLUMNAR) return { values: decodeColumns(body, r.offset, n), timestamps };
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
