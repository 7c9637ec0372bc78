/**
 * Record values as columns (design record 018): a batch of plain objects with the same fields in the
 * same order, the shape records almost always have, is written as its field names once and then one
 * column per field: numbers as a Float64Array (an Int32Array when every one is a 32-bit integer),
 * strings as one UTF-8 buffer with each string's length, booleans as bytes, anything else in that
 * field as one msgpackr array. Decoding makes a batch's records in one loop generated for the field
 * list, so the objects operators take share one hidden class.
 *
 * Arrays of one length (tuples: a pre-aggregation's `[key, accumulator]` partials, a user's pairs)
 * are columnar too, for a receiver that reads them (`tuples`): one column per position, every field
 * name empty, and the batch flags say so (batch.ts). A batch of any other shape (primitives, arrays
 * of differing lengths, class instances, differing fields) is not columnar: `encodeColumns` returns
 * undefined and the caller uses msgpackr as before.
 *
 *   columns  = u16 fieldCount, field*, column*
 *   field    = u16 nameBytes, name (UTF-8), u8 columnType
 *   column   = F64: f64 LE x count | I32: i32 LE x count | BOOL: u8 x count
 *            | STR: u32 utf8Bytes, u32 length (UTF-16 units) x count, utf8 bytes
 *   (all LE; F64 columns start at a multiple of 8 from the batch's start, I32 and STR at a multiple
 *   of 4, zero bytes before them)
 *            | PACKED: u32 bytes, msgpackr array of count values
 *            | CONST: f64 LE (every value of the column that number; at a multiple of 8)
 *
 * CONST is written only for a receiver that reads it (`constants`): a window's results carry its start
 * and end, the same for every record of a fire, which as F64 columns were 16 of a result's 24 bytes.
 */
import { endianness } from 'node:os';
import { Packr, Unpackr } from 'msgpackr';
import { firstShape, Kind, MAX_FIELDS, shapeOf, tupleShapeOf, type Rows } from './column-shapes.js';
import { FrameDecodeError } from './wire.js';

const F64 = 1;
const I32 = 2;
const STR = 3;
const BOOL = 4;
const PACKED = 5;
const CONST = 6;

/** Columns are written with the host's typed arrays; a big-endian host sends msgpackr instead. */
export const COLUMNS_SUPPORTED = endianness() === 'LE';

const packr = new Packr({ useRecords: true, moreTypes: true });
const unpackr = new Unpackr({ useRecords: true, moreTypes: true });

/**
 * One column as it will be written: a plain class rather than a closure per column, since encoding
 * makes a few per batch (and closures cost a function object each, more under a loader that names them).
 */
class Column {
  constructor(
    readonly type: number,
    readonly nameBytes: Buffer,
    readonly bytes: number,
    /** F64, I32, CONST: the numbers. */
    readonly nums: Float64Array | undefined,
    /** STR, BOOL: the values. */
    readonly vals: unknown[] | undefined,
    /** STR: the strings joined, and its UTF-8 length. */
    readonly text: string,
    readonly utf8: number,
    /** PACKED: the msgpack array. */
    readonly packed: Buffer | undefined,
  ) {}
}

function writeColumn(c: Column, out: Buffer, at: number): void {
  switch (c.type) {
    case CONST:
      out.writeDoubleLE(c.nums![0]!, at);
      return;
    case I32:
      new Int32Array(out.buffer, out.byteOffset + at, c.nums!.length).set(c.nums!);
      return;
    case F64:
      new Float64Array(out.buffer, out.byteOffset + at, c.nums!.length).set(c.nums!);
      return;
    case STR: {
      const strs = c.vals as string[];
      const n = strs.length;
      out.writeUInt32LE(c.utf8, at);
      // Aligned (the column starts at a multiple of 4), so the lengths go straight in.
      const lengths = new Uint32Array(out.buffer, out.byteOffset + at + 4, n);
      for (let j = 0; j < n; j++) lengths[j] = strs[j]!.length;
      out.write(c.text, at + 4 + 4 * n, c.utf8, 'utf8');
      return;
    }
    case BOOL: {
      const vals = c.vals!;
      for (let j = 0; j < vals.length; j++) out[at + j] = vals[j] ? 1 : 0;
      return;
    }
    default:
      out.writeUInt32LE(c.packed!.length, at);
      c.packed!.copy(out, at + 4);
  }
}

/**
 * Memory kept per column position and reused by every batch, so a batch does not allocate a buffer per
 * column: a batch's columns are read or written only while it is encoded or decoded. Bounded: the first
 * `positions` positions keep at most `bytes` each; a column past either gets memory of its own.
 */
class ColumnScratch {
  private readonly kept: ArrayBuffer[] = [];

  constructor(
    private readonly positions: number,
    private readonly bytes: number,
  ) {}

  /** At least `bytes` bytes for column `i`, aligned for any typed array. */
  memory(i: number, bytes: number): ArrayBuffer {
    if (i >= this.positions || bytes > this.bytes) return new ArrayBuffer(bytes);
    return (this.kept[i] ??= new ArrayBuffer(this.bytes));
  }
}

/** Where encoding reads a field's numbers: 4,096 rows for each of up to MAX_FIELDS fields. */
const encodeScratch = new ColumnScratch(MAX_FIELDS, 8 * 4096);

function numberColumn(nameBytes: Buffer, kind: Kind, nums: Float64Array): Column {
  const n = nums.length;
  if (kind === Kind.Constant) return new Column(CONST, nameBytes, 8, nums, undefined, '', 0, undefined);
  if (kind === Kind.Ints) return new Column(I32, nameBytes, 4 * n, nums, undefined, '', 0, undefined);
  return new Column(F64, nameBytes, 8 * n, nums, undefined, '', 0, undefined);
}

/** A column of values that are not all numbers: strings, booleans, or anything else packed. */
function otherColumn(nameBytes: Buffer, vals: unknown[]): Column {
  const n = vals.length;
  const t = typeof vals[0];
  let same = t === 'string' || t === 'boolean';
  for (let j = 1; same && j < n; j++) if (typeof vals[j] !== t) same = false;
  if (same && t === 'string') {
    const joined = (vals as string[]).join('');
    // A lone surrogate would not survive UTF-8 (it becomes U+FFFD): such a column is packed.
    if ((joined as unknown as { isWellFormed(): boolean }).isWellFormed()) {
      const utf8 = Buffer.byteLength(joined, 'utf8');
      return new Column(STR, nameBytes, 4 + 4 * n + utf8, undefined, vals, joined, utf8, undefined);
    }
  }
  if (same && t === 'boolean') return new Column(BOOL, nameBytes, n, undefined, vals, '', 0, undefined);
  const packed = packr.pack(vals);
  return new Column(PACKED, nameBytes, 4 + packed.length, undefined, undefined, '', 0, packed);
}

/**
 * `values` as columns after `prefix + head` free bytes (the caller's frame header, then its batch
 * header), and whether they are tuples; undefined when they are not all plain objects of one field
 * list (or, with `tuples`, all arrays of one length). Typed columns are aligned to their width from
 * the batch's start (after `prefix`), so a receiver whose batch starts aligned reads them in place.
 * With `constants` (the receiver reads them), a number column of one value is that value alone.
 */
export function encodeColumns(
  values: readonly unknown[],
  prefix: number,
  head: number,
  constants = false,
  tuples = false,
): { bytes: Buffer; tuples: boolean } | undefined {
  if (!COLUMNS_SUPPORTED || values.length === 0) return undefined;
  const shape = firstShape(values[0], tuples);
  if (!shape) return undefined;
  const n = values.length;
  const f = shape.names.length;
  const into = new Array<Float64Array>(f);
  for (let i = 0; i < f; i++) into[i] = new Float64Array(encodeScratch.memory(i, 8 * n), 0, n);
  const kinds = new Array<Kind>(f);
  if (!shape.scan(values, into, kinds, constants)) return undefined;
  // The scratch arrays are read before encodeColumns returns (every column is written below), so they are free again after.
  const cols = new Array<Column>(f);
  for (let i = 0; i < f; i++) {
    const kind = kinds[i]!;
    cols[i] =
      kind === Kind.Mixed
        ? otherColumn(shape.nameBytes[i]!, shape.column(values, i))
        : numberColumn(shape.nameBytes[i]!, kind, into[i]!);
  }
  let size = head + 2;
  for (const c of cols) size += 3 + c.nameBytes.length;
  for (const c of cols) size = pad(size, c.type) + c.bytes;
  const out = alignedBuffer(prefix, size);
  let at = head;
  out.writeUInt16LE(cols.length, prefix + at);
  at += 2;
  for (const c of cols) {
    out.writeUInt16LE(c.nameBytes.length, prefix + at);
    c.nameBytes.copy(out, prefix + at + 2);
    out[prefix + at + 2 + c.nameBytes.length] = c.type;
    at += 3 + c.nameBytes.length;
  }
  for (const c of cols) {
    at = pad(at, c.type);
    writeColumn(c, out, prefix + at);
    at += c.bytes;
  }
  return { bytes: out, tuples: shape.tuple };
}

/**
 * Frames are carved from slabs of zeroed memory, each part used once (so padding is zero), rather than
 * an ArrayBuffer per batch: a buffer of its own costs an allocation, a zero-fill, its tracking by the
 * garbage collector and a free, per batch. A slab lives while a frame cut from it waits to be written.
 */
const SLAB_BYTES = 256 * 1024;
let slab = new ArrayBuffer(0);
let slabUsed = 0;

/** `prefix + size` bytes, zeroed, with byte `prefix` at a multiple of 8 in memory, so column offsets from it are alignments too. */
function alignedBuffer(prefix: number, size: number): Buffer {
  const bytes = prefix + size;
  // A slab's memory starts at a multiple of 8 (any ArrayBuffer's does); the batch's start is padded to one.
  const start = Math.ceil((slabUsed + prefix) / 8) * 8 - prefix;
  if (start + bytes <= slab.byteLength) {
    slabUsed = start + bytes;
    return Buffer.from(slab, start, bytes);
  }
  const slack = (8 - (prefix % 8)) % 8;
  if (bytes > SLAB_BYTES / 4) return Buffer.from(new ArrayBuffer(slack + bytes), slack, bytes);
  slab = new ArrayBuffer(SLAB_BYTES);
  slabUsed = slack + bytes;
  return Buffer.from(slab, slack, bytes);
}

/** Typed columns start at a multiple of their width from the start of the batch (zero padding). */
function pad(at: number, type: number): number {
  const w = type === F64 || type === CONST ? 8 : type === I32 || type === STR ? 4 : 1;
  return Math.ceil(at / w) * w;
}

/** A columnar batch's field list as read: each column's type, and the code that makes its records from the columns. */
interface Header {
  types: number[];
  rows: Rows;
}

/**
 * Field lists read, by their bytes (latin1, one character a byte, after a byte for `tuples`): a channel's
 * batches repeat one, so a batch after the first costs one lookup, not a string per field name and a
 * shape lookup. Bounded: a peer cannot grow it past MAX_HEADERS lists of MAX_CACHED_HEADER_BYTES each.
 */
const headers = new Map<string, Header>();
const MAX_HEADERS = 256;
/** A field list longer than this is read every time, never kept (the cache's memory stays small). */
const MAX_CACHED_HEADER_BYTES = 4096;

function need(view: Buffer, at: number, bytes: number, what: string): void {
  if (bytes < 0 || at + bytes > view.length)
    throw new FrameDecodeError(`columnar batch: ${what} needs ${bytes} bytes, ${view.length - at} remain`);
}

/** The header of `f` fields from `start` to `end` (as walked by decodeColumns). */
function headerOf(view: Buffer, start: number, end: number, f: number, tuples: boolean): Header {
  const key =
    end - start <= MAX_CACHED_HEADER_BYTES
      ? (tuples ? '\u0001' : '\u0000') + view.toString('latin1', start, end)
      : undefined;
  let h = key === undefined ? undefined : headers.get(key);
  if (h) return h;
  const names: string[] = [];
  const types: number[] = [];
  for (let at = start, i = 0; i < f; i++) {
    const len = view.readUInt16LE(at);
    names.push(view.toString('utf8', at + 2, at + 2 + len));
    types.push(view[at + 2 + len]!);
    at += 3 + len;
  }
  if (tuples) {
    if (names.some((n) => n !== '')) throw new FrameDecodeError('columnar batch: a tuple column has a name');
  } else if (names.includes('__proto__') || new Set(names).size !== f)
    throw new FrameDecodeError('columnar batch: a field named twice, or __proto__');
  h = { types, rows: (tuples ? tupleShapeOf(f) : shapeOf(names)).rows(types.map((t) => t === CONST)) };
  if (key === undefined) return h;
  if (headers.size >= MAX_HEADERS) headers.clear();
  headers.set(key, h);
  return h;
}

/** The `count` records (arrays, when `tuples`) written by encodeColumns into `body` (the whole batch) from `start` (its `head`). */
export function decodeColumns(body: Uint8Array, start: number, count: number, tuples = false): unknown[] {
  const view = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let at = start;
  need(view, at, 2, 'the field count');
  const f = view.readUInt16LE(at);
  at += 2;
  if (f === 0 || f > MAX_FIELDS) throw new FrameDecodeError(`columnar batch: ${f} fields`);
  const fieldsAt = at;
  for (let i = 0; i < f; i++) {
    need(view, at, 2, 'a field name length');
    const len = view.readUInt16LE(at);
    need(view, at, 3 + len, 'a field');
    at += 3 + len;
  }
  const { types, rows } = headerOf(view, fieldsAt, at, f, tuples);
  const cols: unknown[] = [];
  for (let i = 0; i < f; i++) {
    const type = types[i]!;
    // Padded from the batch's start, as written; read in place only when the memory is aligned too.
    at = pad(at, type);
    switch (type) {
      case F64:
        need(view, at, 8 * count, 'a number column');
        cols.push(
          (view.byteOffset + at) % 8 === 0
            ? new Float64Array(view.buffer, view.byteOffset + at, count)
            : new Float64Array(copy(view, at, 8 * count, i), 0, count),
        );
        at += 8 * count;
        break;
      case I32:
        need(view, at, 4 * count, 'an integer column');
        cols.push(
          (view.byteOffset + at) % 4 === 0
            ? new Int32Array(view.buffer, view.byteOffset + at, count)
            : new Int32Array(copy(view, at, 4 * count, i), 0, count),
        );
        at += 4 * count;
        break;
      case CONST: {
        need(view, at, 8, 'a constant column');
        // The value itself: the rows code reads it once for every row.
        cols.push(view.readDoubleLE(at));
        at += 8;
        break;
      }
      case BOOL: {
        need(view, at, count, 'a boolean column');
        const b = new Array<boolean>(count);
        for (let j = 0; j < count; j++) b[j] = view[at + j] !== 0;
        cols.push(b);
        at += count;
        break;
      }
      case STR: {
        need(view, at, 4 + 4 * count, 'a string column');
        const utf8 = view.readUInt32LE(at);
        at += 4;
        const lengths =
          (view.byteOffset + at) % 4 === 0
            ? new Uint32Array(view.buffer, view.byteOffset + at, count)
            : new Uint32Array(copy(view, at, 4 * count, i), 0, count);
        at += 4 * count;
        need(view, at, utf8, 'a string column');
        const all = view.toString('utf8', at, at + utf8);
        at += utf8;
        const s = new Array<string>(count);
        let from = 0;
        for (let j = 0; j < count; j++) {
          const to = from + lengths[j]!;
          s[j] = all.slice(from, to);
          from = to;
        }
        if (from !== all.length)
          throw new FrameDecodeError(
            `columnar batch: string lengths add up to ${from}, the column holds ${all.length}`,
          );
        cols.push(s);
        break;
      }
      case PACKED: {
        need(view, at, 4, 'a packed column');
        const len = view.readUInt32LE(at);
        need(view, at, 4 + len, 'a packed column');
        let vals: unknown;
        try {
          vals = unpackr.unpack(view.subarray(at + 4, at + 4 + len));
        } catch (err) {
          throw new FrameDecodeError(`columnar batch: a packed column does not decode: ${(err as Error).message}`);
        }
        if (!Array.isArray(vals) || vals.length !== count)
          throw new FrameDecodeError(
            `columnar batch: a packed column holds ${Array.isArray(vals) ? vals.length : typeof vals} values, not ${count}`,
          );
        cols.push(vals);
        at += 4 + len;
        break;
      }
      default:
        throw new FrameDecodeError(`columnar batch: column type ${type} not understood`);
    }
  }
  if (at !== view.length) throw new FrameDecodeError(`columnar batch: ${view.length - at} bytes after the last column`);
  return rows(cols, count);
}

/** Where an unaligned column is copied to be read: the first 16 positions keep up to 64 KB each. */
const decodeScratch = new ColumnScratch(16, 64 * 1024);

/** `bytes` bytes of `view` from `at`, for column `i`, in memory aligned for any typed array. */
function copy(view: Buffer, at: number, bytes: number, i: number): ArrayBuffer {
  const ab = decodeScratch.memory(i, bytes);
  view.copy(new Uint8Array(ab, 0, bytes), 0, at, at + bytes);
  return ab;
}
