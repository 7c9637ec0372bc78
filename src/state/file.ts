/**
 * A subtask's state file. Keyed state arrives already encoded (one buffer per key group), so the file
 * is a small msgpackr header, in which every large byte array is replaced by a reference, followed by
 * those arrays as they are: writing one copies nothing, and reading one slices the file instead of
 * copying out of it.
 *
 *   "CLKS" | u32 header length | header (msgpackr: { blobs: lengths[], value }) | blob 0 | blob 1 | ...
 */
import { open, rename } from 'node:fs/promises';
import { addExtension, Packr } from 'msgpackr';
import { StateError } from '../errors.js';

const MAGIC = Buffer.from('CLKS');
/** Byte arrays at least this long go after the header instead of inside it. */
const BLOB_MIN_BYTES = 1024;
const BLOB_EXTENSION_TYPE = 0x43;

class BlobRef {
  constructor(readonly index: number) {}
}

const headerPackr = new Packr({ structuredClone: true, moreTypes: true });
// Extensions are global in msgpackr; BlobRefs only ever appear in state file headers.
addExtension({
  Class: BlobRef,
  type: BLOB_EXTENSION_TYPE,
  write: (ref: BlobRef) => ref.index,
  read: (index: number) => new BlobRef(index),
});

/** Copy `value`'s containers (objects, arrays, Maps), replacing byte arrays by what `swap` returns. */
function mapBytes(value: unknown, swap: (v: unknown) => unknown, seen = new Map<object, unknown>()): unknown {
  const swapped = swap(value);
  if (swapped !== value || value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return swapped;
  const done = seen.get(value);
  if (done !== undefined) return done;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    seen.set(value, out);
    for (const v of value) out.push(mapBytes(v, swap, seen));
    return out;
  }
  if (value instanceof Map) {
    const out = new Map<unknown, unknown>();
    seen.set(value, out);
    for (const [k, v] of value) out.set(k, mapBytes(v, swap, seen));
    return out;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  const out: Record<string, unknown> = {};
  seen.set(value, out);
  for (const [k, v] of Object.entries(value)) out[k] = mapBytes(v, swap, seen);
  return out;
}

/** The chunks of a state file for `value`, to write one after another. */
export function encodeStateFile(value: unknown): Uint8Array[] {
  const blobs: Uint8Array[] = [];
  const swapped = mapBytes(value, (v) => {
    if (!(v instanceof Uint8Array) || v.length < BLOB_MIN_BYTES) return v;
    blobs.push(v);
    return new BlobRef(blobs.length - 1);
  });
  const header = headerPackr.pack({ blobs: blobs.map((b) => b.length), value: swapped });
  const prefix = Buffer.alloc(8);
  MAGIC.copy(prefix, 0);
  prefix.writeUInt32BE(header.length, 4);
  return [prefix, header, ...blobs];
}

/** Read a state file written by encodeStateFile; its byte arrays are views into `file`. */
export function decodeStateFile(file: Uint8Array, what: string): unknown {
  const buf = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (buf.length < 8 || !buf.subarray(0, 4).equals(MAGIC)) throw new StateError(`${what} is not a clink state file (no CLKS header)`);
  const headerEnd = 8 + buf.readUInt32BE(4);
  if (headerEnd > buf.length) throw new StateError(`${what} is truncated: its header needs ${headerEnd} bytes, the file has ${buf.length}`);
  let header: { blobs: number[]; value: unknown };
  try {
    header = headerPackr.unpack(buf.subarray(8, headerEnd)) as { blobs: number[]; value: unknown };
  } catch (err) {
    throw new StateError(`${what} has a damaged header: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
  const { blobs, value } = header;
  if (!Array.isArray(blobs) || !blobs.every((n) => Number.isInteger(n) && n >= 0)) throw new StateError(`${what} has a damaged header: no list of data lengths`);
  const views: Uint8Array[] = [];
  let at = headerEnd;
  for (const length of blobs) {
    if (at + length > buf.length) throw new StateError(`${what} is truncated: its data ends at byte ${buf.length}, not ${at + length}`);
    views.push(new Uint8Array(buf.buffer, buf.byteOffset + at, length));
    at += length;
  }
  return mapBytes(value, (v) => (v instanceof BlobRef ? views[v.index] : v));
}

/**
 * Write `value` as a state file at `path` durably (a temp name, fsync, rename), so an acknowledged
 * snapshot survives a crash of the machine. Returns the bytes written.
 */
export async function writeStateFile(path: string, value: unknown): Promise<number> {
  const chunks = encodeStateFile(value);
  const tmp = `${path}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    // writev takes at most IOV_MAX (1024) buffers at a time.
    for (let i = 0; i < chunks.length; i += 1024) await fh.writev(chunks.slice(i, i + 1024));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  return chunks.reduce((n, c) => n + c.length, 0);
}
