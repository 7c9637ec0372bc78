/**
 * The bytes of one key group of one state table in a snapshot.
 *
 * A StateTable's group is its Map through msgpackr in structured-clone mode. A NumberTable's group
 * (integer keys to numbers: a window's counts) is written flat, as two columns, keys and values, each a
 * typed array as narrow as its numbers allow: a checkpoint writes arrays instead of walking a million
 * entries, and a restore reads them without parsing (design record 007).
 *
 * Flat layout (little-endian): 0xc1 (the one byte MessagePack never uses, so no msgpackr encoding starts
 * with it), the layout version (1), the key column's type, the value column's type, the entry count
 * (u32), eight bytes zero; then the key column and, from the next 8-aligned offset, the value column.
 * Column types: 0 float64, 1 int32, 2 uint8.
 *
 * A disk table's group is written as its store holds it, pairs of bytes (no value decoded and encoded
 * again): 0xc1, the layout version (2), two bytes zero, the pair count (u32); then per pair the store
 * key's length (u16), the value's length (u32), the key (key-codec.ts) and the value (statePackr).
 */
import { Packr } from 'msgpackr';
import { StateError } from '../errors.js';
import { isInt32 } from '../util/index.js';

/** State holds Maps, Sets, undefined and -Infinity: msgpackr's structured-clone mode keeps them. */
export const statePackr = new Packr({ structuredClone: true, moreTypes: true });

const FLAT_MARK = 0xc1;
const FLAT_VERSION = 1;
const HEADER = 16;
const F64 = 0;
const I32 = 1;
const U8 = 2;
const WIDTH = [8, 4, 1];

const align8 = (n: number): number => Math.ceil(n / 8) * 8;

/** The narrowest column type holding `count` numbers (-0 and NaN need float64). */
function columnTypeOf(values: ArrayLike<number>, count: number): number {
  let type = U8;
  for (let i = 0; i < count; i++) {
    const v = values[i]!;
    if (!isInt32(v)) return F64;
    if (v < 0 || v > 255) type = I32;
  }
  return type;
}

function column(
  type: number,
  buffer: ArrayBufferLike,
  offset: number,
  count: number,
): Float64Array | Int32Array | Uint8Array {
  return type === F64
    ? new Float64Array(buffer, offset, count)
    : type === I32
      ? new Int32Array(buffer, offset, count)
      : new Uint8Array(buffer, offset, count);
}

/** Encode a NumberTable's group: its keys and their values, as columns. */
export function encodeNumberGroup(keys: ArrayLike<number>, values: ArrayLike<number>): Uint8Array {
  const count = keys.length;
  const keyType = columnTypeOf(keys, count);
  const valueType = columnTypeOf(values, count);
  const valuesAt = HEADER + align8(WIDTH[keyType]! * count);
  const out = new Uint8Array(valuesAt + WIDTH[valueType]! * count);
  out[0] = FLAT_MARK;
  out[1] = FLAT_VERSION;
  out[2] = keyType;
  out[3] = valueType;
  new DataView(out.buffer).setUint32(4, count, true);
  column(keyType, out.buffer, HEADER, count).set(keys);
  column(valueType, out.buffer, valuesAt, count).set(values);
  return out;
}

/** Hand every entry of a group encoded by encodeNumberGroup to `fn`, in its order. */
export function decodeNumberGroup(bytes: Uint8Array, fn: (key: number, value: number) => void): void {
  if (bytes.length < HEADER || bytes[0] !== FLAT_MARK || bytes[1] !== FLAT_VERSION)
    throw corrupt('no flat group header');
  const keyType = bytes[2]!;
  const valueType = bytes[3]!;
  if (keyType > U8 || valueType > U8) throw corrupt(`column types ${keyType}/${valueType}`);
  const count = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4, true);
  const valuesAt = HEADER + align8(WIDTH[keyType]! * count);
  if (bytes.length !== valuesAt + WIDTH[valueType]! * count)
    throw corrupt(`${bytes.length} bytes for ${count} entries`);
  // Typed arrays need aligned memory: a copy when the file's buffer does not give it.
  const b = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  const keys = column(keyType, b.buffer, b.byteOffset + HEADER, count);
  const values = column(valueType, b.buffer, b.byteOffset + valuesAt, count);
  for (let i = 0; i < count; i++) fn(keys[i]!, values[i]!);
}

function corrupt(what: string): StateError {
  return new StateError(
    `a key group in the state file is not readable (${what}): the file is damaged; restore from an earlier checkpoint`,
  );
}

const PAIRS_VERSION = 2;
const PAIRS_HEADER = 8;
const PAIR_HEADER = 6;

/** Whether a group was written by encodePairs (a disk table's). */
export const isPairsGroup = (bytes: Uint8Array): boolean =>
  bytes.length >= PAIRS_HEADER && bytes[0] === FLAT_MARK && bytes[1] === PAIRS_VERSION;

/** Encode a group as pairs of store key and value bytes, as a disk table's store holds them. */
export function encodePairs(pairs: readonly [key: Uint8Array, value: Uint8Array][]): Uint8Array {
  let size = PAIRS_HEADER;
  for (const [k, v] of pairs) size += PAIR_HEADER + k.length + v.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out[0] = FLAT_MARK;
  out[1] = PAIRS_VERSION;
  view.setUint32(4, pairs.length, true);
  let at = PAIRS_HEADER;
  for (const [k, v] of pairs) {
    view.setUint16(at, k.length, true);
    view.setUint32(at + 2, v.length, true);
    out.set(k, at + PAIR_HEADER);
    out.set(v, at + PAIR_HEADER + k.length);
    at += PAIR_HEADER + k.length + v.length;
  }
  return out;
}

/** Hand every pair of a group encoded by encodePairs to `fn`, as views of `bytes`. */
export function decodePairs(bytes: Uint8Array, fn: (key: Uint8Array, value: Uint8Array) => void): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(4, true);
  let at = PAIRS_HEADER;
  for (let i = 0; i < count; i++) {
    if (at + PAIR_HEADER > bytes.length) throw corrupt(`pair ${i} of ${count} past the end`);
    const kl = view.getUint16(at, true);
    const vl = view.getUint32(at + 2, true);
    const k = at + PAIR_HEADER;
    if (k + kl + vl > bytes.length) throw corrupt(`pair ${i} of ${count} past the end`);
    fn(bytes.subarray(k, k + kl), bytes.subarray(k + kl, k + kl + vl));
    at = k + kl + vl;
  }
  if (at !== bytes.length) throw corrupt(`${bytes.length - at} bytes after ${count} pairs`);
}
