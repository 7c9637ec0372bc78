/**
 * The keys of the disk backend's store: the key group (u16, big-endian, so a key group's keys are one
 * range of the store) and then the normalized key (normalizeKey: a primitive) as a type byte and its
 * bytes. Two keys a Map tells apart are two store keys, and two it takes for one are one: -0 is written
 * as 0 and every NaN as one NaN, as a Map compares them.
 */
import { StateError } from '../errors.js';

const UNDEFINED = 0;
const NULL = 1;
const FALSE = 2;
const TRUE = 3;
const NUMBER = 4;
const STRING = 5;
const BIGINT = 6;
const HEADER = 3;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** A number's 8 bytes, read without a Buffer made per key. */
const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The store key of `key` (a normalized key) in key group `keyGroup`. */
export function encodeStoreKey(keyGroup: number, key: unknown): Buffer {
  let out: Buffer;
  switch (typeof key) {
    case 'number': {
      out = Buffer.allocUnsafe(HEADER + 8);
      out[2] = NUMBER;
      out.writeDoubleBE(Number.isNaN(key) ? NaN : key === 0 ? 0 : key, HEADER);
      break;
    }
    case 'string':
    case 'bigint': {
      const text = encoder.encode(typeof key === 'string' ? key : key.toString());
      out = Buffer.allocUnsafe(HEADER + text.length);
      out[2] = typeof key === 'string' ? STRING : BIGINT;
      out.set(text, HEADER);
      break;
    }
    case 'boolean':
      out = Buffer.allocUnsafe(HEADER);
      out[2] = key ? TRUE : FALSE;
      break;
    default:
      if (key !== undefined && key !== null)
        throw new StateError(`a ${typeof key} is not a normalized state key (normalizeKey gives primitives)`);
      out = Buffer.allocUnsafe(HEADER);
      out[2] = key === null ? NULL : UNDEFINED;
  }
  out.writeUInt16BE(keyGroup, 0);
  return out;
}

/** The normalized key a store key holds. */
export function decodeStoreKey(bytes: Uint8Array): unknown {
  const type = bytes[2];
  const body = (): Uint8Array => bytes.subarray(HEADER);
  switch (type) {
    case NUMBER:
      for (let i = 0; i < 8; i++) f64Bytes[LITTLE_ENDIAN ? 7 - i : i] = bytes[HEADER + i]!;
      return f64[0];
    case STRING:
      return decoder.decode(body());
    case BIGINT:
      return BigInt(decoder.decode(body()));
    case TRUE:
      return true;
    case FALSE:
      return false;
    case NULL:
      return null;
    case UNDEFINED:
      return undefined;
    default:
      throw new StateError(`a key in the local state store has type byte ${type}: the store is damaged`);
  }
}

/** The first store key of key group `keyGroup`, and the first of the next one (a range's end). */
export function keyGroupBounds(keyGroup: number): [start: Buffer, end: Buffer] {
  const start = Buffer.alloc(2);
  start.writeUInt16BE(keyGroup, 0);
  const end = Buffer.alloc(2);
  end.writeUInt16BE(keyGroup + 1, 0);
  return [start, end];
}

/** The least store key after `key` (to go on a range past it). */
export const storeKeyAfter = (key: Uint8Array): Buffer => Buffer.concat([key, Buffer.of(0)]);
