/**
 * Record values as columns (design record 018): a batch of plain objects with the same fields in the
 * same order, the shape records almost always have, is written as its field names once and then one
 * column per field: numbers as a Float64Array (an Int32Array when every one is a 32-bit integer),
 * strings as one UTF-8 buffer with each string's length, booleans as bytes, anything else in that
 * field as one msgpackr array. Decoding builds each record with a constructor made for the field
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
import { FrameDecodeError } from './wire.js';
import { isInt32, sameNumber } from '../util/index.js';

const F64 = 1;
const I32 = 2;
const STR = 3;
const BOOL = 4;
const PACKED = 5;
const CONST = 6;

/** Columns are written with the host's typed arrays; a big-endian host sends msgpackr instead. */
export const COLUMNS_SUPPORTED = endianness() === 'LE';
/** A tuple's field name: none. */
const EMPTY = Buffer.alloc(0);
/** More fields than this is not a record shape worth a schema. */
const MAX_FIELDS = 256;

const packr = new Packr({ useRecords: true, moreTypes: true });
const unpackr = new Unpackr({ useRecords: true, moreTypes: true });

/** What one pass over a column finds: every value a number (all 32-bit integers, -0 aside, or not; or one number throughout), a string, a boolean; or mixed. */
const Kind = { Ints: 0, Numbers: 1, Strings: 2, Booleans: 3, Mixed: 4, Constant: 5 } as const;
type Kind = (typeof Kind)[keyof typeof Kind];

interface Shape {
  /** Its records are arrays of names.length values (the names are their positions; none is written). */
  tuple: boolean;
  names: string[];
  /** Each name's UTF-8, as the batch writes it (made once per shape, not per batch). */
  nameBytes: Buffer[];
  /** Whether a value has exactly these own enumerable fields, in this order. */
  matches: (v: unknown) => boolean;
  /** The values of field i of every record. */
  column: (values: readonly unknown[], i: number) => unknown[];
  /** Per field, its values read into `into` when every one is a number: what kind of numbers (Mixed when one is not). */
  numbers: ((values: readonly unknown[], into: Float64Array, constants: boolean) => Kind)[];
  /** A record (or tuple) from the columns at row j. */
  build: (cols: ArrayLike<unknown>[], j: number) => unknown;
}

/** Shapes seen, by their field list joined: few per job, so the cache stays small; bounded anyway. */
const shapes = new Map<string, Shape>();
const MAX_SHAPES = 1024;

function shapeOf(names: string[]): Shape {
  const key = names.join('\u0000');
  let s = shapes.get(key);
  if (s) return s;
  s = makeShape(names, false);
  if (shapes.size >= MAX_SHAPES) shapes.clear();
  shapes.set(key, s);
  return s;
}

/** Tuple shapes, by length (at most MAX_FIELDS of them). */
const tupleShapes: Shape[] = [];

function tupleShapeOf(length: number): Shape {
  return (tupleShapes[length] ??= makeShape(Array.from({ length }, (_, i) => String(i)), true));
}

function makeShape(names: string[], tuple: boolean): Shape {
  // Generated code reads and writes the fields by name (a tuple's by index), so each site sees one shape
  // (fast property access); names enter only as JSON string literals, indexes as integers.
  const lit = names.map((n) => (tuple ? n : JSON.stringify(n)));
  const matches = tuple
    ? (new Function('proto', `return function (v) { return Array.isArray(v) && v.length === ${lit.length} && Object.getPrototypeOf(v) === proto; }`)(Array.prototype) as Shape['matches'])
    : (new Function(
        'proto',
        `return function (v) {
          if (typeof v !== 'object' || v === null || Object.getPrototypeOf(v) !== proto) return false;
          let i = 0;
          for (const k in v) {
            switch (i++) {${lit.map((l, i) => `case ${i}: if (k !== ${l}) return false; break;`).join(' ')}
              default: return false;
            }
          }
          return i === ${lit.length};
        }`,
      )(Object.prototype) as Shape['matches']);
  const column = new Function(
    'values',
    'i',
    `const n = values.length; const out = new Array(n);
    switch (i) {${lit.map((l, i) => `case ${i}: for (let j = 0; j < n; j++) out[j] = values[j][${l}]; break;`).join(' ')}}
    return out;`,
  ) as Shape['column'];
  const build = new Function('cols', 'j', tuple ? `return [${lit.map((_, i) => `cols[${i}][j]`).join(', ')}];` : `return { ${lit.map((l, i) => `${l}: cols[${i}][j]`).join(', ')} };`) as Shape['build'];
  // One function per field, so each reads one property of one shape; the numbers go straight into a
  // Float64Array (a typed column is then a typed-array copy: setting one from a JS array of mixed
  // element kinds takes V8's slow path, ~20 ns a value).
  const numbers = lit.map(
    (l) =>
      new Function(
        'isInt32',
        'sameNumber',
        'K',
        `return function (values, into, constants) {
          const n = values.length;
          const first = values[0][${l}];
          let ints = true;
          // One number throughout, bit for bit (NaN never is; 0 and -0 are two).
          let same = constants;
          for (let j = 0; j < n; j++) {
            const x = values[j][${l}];
            if (typeof x !== 'number') return K.Mixed;
            into[j] = x;
            // -0 is not an Int32Array value (x | 0 is +0): it keeps the column in doubles.
            if (ints && !isInt32(x)) ints = false;
            if (same && !sameNumber(x, first)) same = false;
          }
          // A constant (8 bytes, padded to 8) only where it is smaller than the column: 4 integers or 2 doubles.
          if (same && n >= (ints ? 4 : 2)) return K.Constant;
          return ints ? K.Ints : K.Numbers;
        }`,
      )(isInt32, sameNumber, Kind) as Shape['numbers'][number],
  );
  return { tuple, names, nameBytes: names.map((n) => (tuple ? EMPTY : Buffer.from(n, 'utf8'))), matches, column, build, numbers };
}

/** The shape of a batch's first value when it can be columnar (a tuple only when `tuples`); undefined otherwise. */
function firstShape(v: unknown, tuples: boolean): Shape | undefined {
  if (Array.isArray(v)) return tuples && v.length > 0 && v.length <= MAX_FIELDS && Object.getPrototypeOf(v) === Array.prototype ? tupleShapeOf(v.length) : undefined;
  const names = namesOf(v);
  return names ? shapeOf(names) : undefined;
}

/** The field list of a plain object when it can be columnar; undefined otherwise. */
function namesOf(v: unknown): string[] | undefined {
  if (typeof v !== 'object' || v === null || Object.getPrototypeOf(v) !== Object.prototype) return undefined;
  const names = Object.keys(v);
  // `__proto__` as an own field would set the prototype when rebuilt by a literal.
  if (names.length === 0 || names.length > MAX_FIELDS || names.includes('__proto__')) return undefined;
  return names;
}

type Column = { type: number; bytes: number; write: (out: Buffer, at: number) => void; nameBytes: Buffer };

/** A column of strings, of booleans, or of anything else (numbers are read by Shape.numbers). */
function kindOf(vals: unknown[]): Kind {
  const t = typeof vals[0];
  if (t !== 'string' && t !== 'boolean') return Kind.Mixed;
  for (let j = 1; j < vals.length; j++) if (typeof vals[j] !== t) return Kind.Mixed;
  return t === 'string' ? Kind.Strings : Kind.Booleans;
}

/** Rows up to which a number column is read into a Float64Array kept per field position (larger batches get their own). */
const SCRATCH_ROWS = 4096;
const scratch: Float64Array[] = [];
const scratchFor = (i: number, n: number): Float64Array => (n > SCRATCH_ROWS ? new Float64Array(n) : (scratch[i] ??= new Float64Array(SCRATCH_ROWS)));

/** Field `i` of every value as a column. encodeColumns writes every column before it returns, so the scratch arrays are free again after. */
function planField(shape: Shape, values: readonly unknown[], i: number, constants: boolean): Column {
  const n = values.length;
  const nameBytes = shape.nameBytes[i]!;
  if (typeof (values[0] as Record<string, unknown>)[shape.names[i]!] === 'number') {
    const into = scratchFor(i, n);
    const kind = shape.numbers[i]!(values, into, constants);
    if (kind !== Kind.Mixed) return numberColumn(nameBytes, kind, n === into.length ? into : into.subarray(0, n));
  }
  return planColumn(nameBytes, shape.column(values, i));
}

function numberColumn(nameBytes: Buffer, kind: Kind, nums: Float64Array): Column {
  const n = nums.length;
  if (kind === Kind.Constant) return { type: CONST, nameBytes, bytes: 8, write: (out, at) => void out.writeDoubleLE(nums[0]!, at) };
  if (kind === Kind.Ints) return { type: I32, nameBytes, bytes: 4 * n, write: (out, at) => void new Int32Array(out.buffer, out.byteOffset + at, n).set(nums) };
  return { type: F64, nameBytes, bytes: 8 * n, write: (out, at) => void new Float64Array(out.buffer, out.byteOffset + at, n).set(nums) };
}

/** A column of values that are not all numbers. */
function planColumn(nameBytes: Buffer, vals: unknown[]): Column {
  const n = vals.length;
  const kind = kindOf(vals);
  if (kind === Kind.Strings) {
    const strs = vals as string[];
    const joined = strs.join('');
    // A lone surrogate would not survive UTF-8 (it becomes U+FFFD): such a column is packed.
    if ((joined as unknown as { isWellFormed(): boolean }).isWellFormed()) {
      const utf8 = Buffer.byteLength(joined, 'utf8');
      return {
        type: STR,
        nameBytes,
        bytes: 4 + 4 * n + utf8,
        write: (out, at) => {
          out.writeUInt32LE(utf8, at);
          // Aligned (the column starts at a multiple of 4), so the lengths go straight in.
          const lengths = new Uint32Array(out.buffer, out.byteOffset + at + 4, n);
          for (let j = 0; j < n; j++) lengths[j] = strs[j]!.length;
          out.write(joined, at + 4 + 4 * n, utf8, 'utf8');
        },
      };
    }
  }
  if (kind === Kind.Booleans) {
    return {
      type: BOOL,
      nameBytes,
      bytes: n,
      write: (out, at) => {
        for (let j = 0; j < n; j++) out[at + j] = vals[j] ? 1 : 0;
      },
    };
  }
  const packed = packr.pack(vals);
  return { type: PACKED, nameBytes, bytes: 4 + packed.length, write: (out, at) => void (out.writeUInt32LE(packed.length, at), packed.copy(out, at + 4)) };
}

/**
 * `values` as columns after `prefix + head` free bytes (the caller's frame header, then its batch
 * header), and whether they are tuples; undefined when they are not all plain objects of one field
 * list (or, with `tuples`, all arrays of one length). Typed columns are aligned to their width from
 * the batch's start (after `prefix`), so a receiver whose batch starts aligned reads them in place.
 * With `constants` (the receiver reads them), a number column of one value is that value alone.
 */
export function encodeColumns(values: readonly unknown[], prefix: number, head: number, constants = false, tuples = false): { bytes: Buffer; tuples: boolean } | undefined {
  if (!COLUMNS_SUPPORTED || values.length === 0) return undefined;
  const shape = firstShape(values[0], tuples);
  if (!shape) return undefined;
  for (let j = 0; j < values.length; j++) if (!shape.matches(values[j])) return undefined;
  const cols = shape.names.map((_, i) => planField(shape, values, i, constants));
  let size = head + 2;
  for (const c of cols) size += 3 + c.nameBytes.length;
  for (const c of cols) size = pad(size, c.type) + c.bytes;
  // Its own ArrayBuffer, with the batch's start at a multiple of 8 in it, so the offsets above are
  // alignments in memory too (a pooled Buffer starts anywhere).
  const slack = (8 - (prefix % 8)) % 8;
  const out = Buffer.from(new ArrayBuffer(slack + prefix + size), slack);
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
    c.write(out, prefix + at);
    at += c.bytes;
  }
  return { bytes: out, tuples: shape.tuple };
}

/** Typed columns start at a multiple of their width from the start of the batch (zero padding). */
function pad(at: number, type: number): number {
  const w = type === F64 || type === CONST ? 8 : type === I32 || type === STR ? 4 : 1;
  return Math.ceil(at / w) * w;
}

/** The `count` records (arrays, when `tuples`) written by encodeColumns into `body` (the whole batch) from `start` (its `head`). */
export function decodeColumns(body: Uint8Array, start: number, count: number, tuples = false): unknown[] {
  const view = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let at = start;
  const need = (bytes: number, what: string): void => {
    if (bytes < 0 || at + bytes > view.length) throw new FrameDecodeError(`columnar batch: ${what} needs ${bytes} bytes, ${view.length - at} remain`);
  };
  need(2, 'the field count');
  const f = view.readUInt16LE(at);
  at += 2;
  if (f === 0 || f > MAX_FIELDS) throw new FrameDecodeError(`columnar batch: ${f} fields`);
  const names: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < f; i++) {
    need(2, 'a field name length');
    const len = view.readUInt16LE(at);
    need(3 + len, 'a field');
    names.push(view.toString('utf8', at + 2, at + 2 + len));
    types.push(view[at + 2 + len]!);
    at += 3 + len;
  }
  if (tuples) {
    if (names.some((n) => n !== '')) throw new FrameDecodeError('columnar batch: a tuple column has a name');
  } else if (names.includes('__proto__') || new Set(names).size !== f) throw new FrameDecodeError('columnar batch: a field named twice, or __proto__');
  const cols: ArrayLike<unknown>[] = [];
  for (let i = 0; i < f; i++) {
    const type = types[i]!;
    // Padded from the batch's start, as written; read in place only when the memory is aligned too.
    at = pad(at, type);
    switch (type) {
      case F64:
        need(8 * count, 'a number column');
        cols.push((view.byteOffset + at) % 8 === 0 ? new Float64Array(view.buffer, view.byteOffset + at, count) : new Float64Array(copy(view, at, 8 * count)));
        at += 8 * count;
        break;
      case I32:
        need(4 * count, 'an integer column');
        cols.push((view.byteOffset + at) % 4 === 0 ? new Int32Array(view.buffer, view.byteOffset + at, count) : new Int32Array(copy(view, at, 4 * count)));
        at += 4 * count;
        break;
      case CONST: {
        need(8, 'a constant column');
        const v = view.readDoubleLE(at);
        // As the column would have been without it: 32-bit integers in an Int32Array, other numbers in a Float64Array.
        cols.push((isInt32(v) ? new Int32Array(count) : new Float64Array(count)).fill(v));
        at += 8;
        break;
      }
      case BOOL: {
        need(count, 'a boolean column');
        const b = new Array<boolean>(count);
        for (let j = 0; j < count; j++) b[j] = view[at + j] !== 0;
        cols.push(b);
        at += count;
        break;
      }
      case STR: {
        need(4 + 4 * count, 'a string column');
        const utf8 = view.readUInt32LE(at);
        at += 4;
        const lengths = (view.byteOffset + at) % 4 === 0 ? new Uint32Array(view.buffer, view.byteOffset + at, count) : new Uint32Array(copy(view, at, 4 * count));
        at += 4 * count;
        need(utf8, 'a string column');
        const all = view.toString('utf8', at, at + utf8);
        at += utf8;
        const s = new Array<string>(count);
        let from = 0;
        for (let j = 0; j < count; j++) {
          const to = from + lengths[j]!;
          s[j] = all.slice(from, to);
          from = to;
        }
        if (from !== all.length) throw new FrameDecodeError(`columnar batch: string lengths add up to ${from}, the column holds ${all.length}`);
        cols.push(s);
        break;
      }
      case PACKED: {
        need(4, 'a packed column');
        const len = view.readUInt32LE(at);
        need(4 + len, 'a packed column');
        let vals: unknown;
        try {
          vals = unpackr.unpack(view.subarray(at + 4, at + 4 + len));
        } catch (err) {
          throw new FrameDecodeError(`columnar batch: a packed column does not decode: ${(err as Error).message}`);
        }
        if (!Array.isArray(vals) || vals.length !== count) throw new FrameDecodeError(`columnar batch: a packed column holds ${Array.isArray(vals) ? vals.length : typeof vals} values, not ${count}`);
        cols.push(vals);
        at += 4 + len;
        break;
      }
      default:
        throw new FrameDecodeError(`columnar batch: column type ${type} not understood`);
    }
  }
  if (at !== view.length) throw new FrameDecodeError(`columnar batch: ${view.length - at} bytes after the last column`);
  const build = (tuples ? tupleShapeOf(f) : shapeOf(names)).build;
  const out = new Array<unknown>(count);
  for (let j = 0; j < count; j++) out[j] = build(cols, j);
  return out;
}

/** `bytes` bytes of `view` from `at` in an ArrayBuffer of their own (aligned for any typed array). */
function copy(view: Buffer, at: number, bytes: number): ArrayBuffer {
  const ab = new ArrayBuffer(bytes);
  view.copy(new Uint8Array(ab), 0, at, at + bytes);
  return ab;
}
