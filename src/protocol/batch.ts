/**
 * The body of a data-plane record batch: [u32 count][u8 flags][f64 timestamp x count, if flag 1]
 * [values]. Timestamps are sent raw only when some record has one; with flag 4 as well, every record
 * has the same one and it is sent once. The values are a msgpack array of count values (msgpackr
 * records, the fastest general codec measured), or, with flag 2, columns (columns.ts: plain objects of
 * one field list, the shape records almost always have; with flag 8 as well, arrays of one length). A
 * sender writes columns only to a receiver that said it reads them (DataCredit.columns), one timestamp
 * or constant columns only to one that said it reads those (DataCredit.constants), and tuples only to
 * one that said so (DataCredit.tuples).
 */
import { Packr, Unpackr } from 'msgpackr';
import { decodeColumns, encodeColumns } from './columns.js';
import { FrameDecodeError, MessageReader } from './wire.js';
import { sameNumber } from '../util/index.js';

const HAS_TIMESTAMPS = 1;
const COLUMNAR = 2;
const ONE_TIMESTAMP = 4;
const TUPLES = 8;
/**
 * Records a batch may hold beyond a byte each. A record of msgpack values, or with a timestamp of its
 * own, takes a byte at least, so a count larger than the bytes is a lie; one timestamp and constant
 * columns make records take less, so a batch written with them holds at most this many (what a count
 * alone can make the receiver allocate stays bounded).
 */
export const MAX_RECORDS_PAST_BYTES = 65_536;
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
  /** Write a timestamp shared by every record once, and constant columns (the receiver reads them). @default false */
  constants?: boolean;
  /** With `columns`: write arrays of one length as columns too (the receiver reads them). @default false */
  tuples?: boolean;
}

export function encodeRecordBatch(
  values: readonly unknown[],
  timestamps: readonly number[],
  o: BatchEncoding = {},
): Buffer {
  const n = values.length;
  let stamped = false;
  for (let i = 0; i < n; i++) {
    if (timestamps[i] !== Number.NEGATIVE_INFINITY) {
      stamped = true;
      break;
    }
  }
  const constants = o.constants === true && n <= MAX_RECORDS_PAST_BYTES;
  const one = stamped && constants && n > 1 && sameTimestamp(timestamps);
  const prefix = o.prefix ?? 0;
  const head = 5 + (one ? 8 : stamped ? 8 * n : 0);
  const cols = o.columns ? encodeColumns(values, prefix, head, constants, o.tuples === true) : undefined;
  const flags =
    (stamped ? HAS_TIMESTAMPS : 0) | (cols ? COLUMNAR : 0) | (one ? ONE_TIMESTAMP : 0) | (cols?.tuples ? TUPLES : 0);
  let out = cols?.bytes;
  if (!out) {
    const packed = packr.pack(values);
    out = Buffer.allocUnsafe(prefix + head + packed.length);
    packed.copy(out, prefix + head);
  }
  out.writeUInt32BE(n, prefix);
  out.writeUInt8(flags, prefix + 4);
  if (one) out.writeDoubleBE(timestamps[0]!, prefix + 5);
  else if (stamped) {
    for (let i = 0, at = prefix + 5; i < n; i++, at += 8) out.writeDoubleBE(timestamps[i]!, at);
  }
  return out;
}

/** Whether every timestamp is the first, bit for bit. */
function sameTimestamp(timestamps: readonly number[]): boolean {
  const t = timestamps[0]!;
  for (let i = 1; i < timestamps.length; i++) if (!sameNumber(timestamps[i]!, t)) return false;
  return true;
}

/** Whether `n` records can be in `bytes`: columns may be constant (8 bytes for any count), so a columnar batch's count is bounded, not by its bytes. */
const fits = (n: number, flags: number, bytes: number): boolean =>
  n <= bytes || ((flags & (COLUMNAR | ONE_TIMESTAMP)) !== 0 && n <= MAX_RECORDS_PAST_BYTES);

export function decodeRecordBatch(body: Uint8Array): EncodedBatch {
  const r = new MessageReader(body);
  const n = r.u32('batch count');
  const flags = r.u8('batch flags');
  if (
    flags > (HAS_TIMESTAMPS | COLUMNAR | ONE_TIMESTAMP | TUPLES) ||
    (flags & (HAS_TIMESTAMPS | ONE_TIMESTAMP)) === ONE_TIMESTAMP ||
    (flags & (COLUMNAR | TUPLES)) === TUPLES
  ) {
    throw new FrameDecodeError(`batch flags ${flags} not understood`);
  }
  const timestamps = new Array<number>(n);
  if (flags & ONE_TIMESTAMP) {
    if (8 > r.remaining || !fits(n, flags, r.remaining - 8))
      throw new FrameDecodeError(`batch count ${n} with one timestamp cannot fit in ${r.remaining} bytes`);
    timestamps.fill(r.f64('timestamp'));
  } else if (flags & HAS_TIMESTAMPS) {
    if (n * 8 > r.remaining) throw new FrameDecodeError(`batch of ${n} timestamps cannot fit in ${r.remaining} bytes`);
    for (let i = 0; i < n; i++) timestamps[i] = r.f64('timestamp');
  } else {
    if (!fits(n, flags, r.remaining)) throw new FrameDecodeError(`batch count ${n} cannot fit in ${r.remaining} bytes`);
    timestamps.fill(Number.NEGATIVE_INFINITY);
  }
  if (flags & COLUMNAR) return { values: decodeColumns(body, r.offset, n, (flags & TUPLES) !== 0), timestamps };
  let values: unknown;
  try {
    values = unpackr.unpack(body.subarray(r.offset));
  } catch (err) {
    throw new FrameDecodeError(`batch values do not decode: ${(err as Error).message}`);
  }
  if (!Array.isArray(values) || values.length !== n) {
    throw new FrameDecodeError(
      `batch says ${n} records, its values hold ${Array.isArray(values) ? values.length : typeof values}`,
    );
  }
  return { values, timestamps };
}
