/**
 * A subtask's state file. Keyed state arrives already encoded (one buffer per key group), so the file
 * is a small msgpackr header, in which every large byte array is replaced by a reference, followed by
 * those arrays as they are: writing one copies nothing, and reading one slices the file instead of
 * copying out of it.
 *
 *   "CLK2" | u32 header length | SHA-256 of the body | body: header (msgpackr: { blobs: lengths[], value }) | blob 0 | blob 1 | ...
 *
 * The digest is verified before anything of the body is decoded, so a flipped bit that would still
 * parse is refused rather than loaded. Files of the first format ("CLKS", no digest) are still read.
 */
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { addExtension, Packr } from 'msgpackr';
import { StateError } from '../errors.js';
import { writeFileDurably, nodeFs, type DurableFs } from '../util/index.js';

const MAGIC = Buffer.from('CLK2');
const LEGACY_MAGIC = Buffer.from('CLKS');
const DIGEST_BYTES = 32;
/** Hashing yields to the event loop after this many bytes, so a large state never stalls heartbeats. */
const HASH_SLICE_BYTES = 4 * 1024 * 1024;
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

/** The body of a state file for `value` (header, then the large byte arrays), and the prefix that goes before it. */
function encodeBody(value: unknown): Uint8Array[] {
  const blobs: Uint8Array[] = [];
  const swapped = mapBytes(value, (v) => {
    if (!(v instanceof Uint8Array) || v.length < BLOB_MIN_BYTES) return v;
    blobs.push(v);
    return new BlobRef(blobs.length - 1);
  });
  return [headerPackr.pack({ blobs: blobs.map((b) => b.length), value: swapped }), ...blobs];
}

function prefixFor(headerLength: number, digest: Uint8Array): Buffer {
  const prefix = Buffer.alloc(8 + DIGEST_BYTES);
  MAGIC.copy(prefix, 0);
  prefix.writeUInt32BE(headerLength, 4);
  prefix.set(digest, 8);
  return prefix;
}

/** The chunks of a state file for `value`, to write one after another. */
export function encodeStateFile(value: unknown): Uint8Array[] {
  const body = encodeBody(value);
  const hash = createHash('sha256');
  for (const c of body) hash.update(c);
  return [prefixFor(body[0]!.length, hash.digest()), ...body];
}

/** SHA-256 of `chunks`, yielding to the event loop between slices of HASH_SLICE_BYTES. */
async function digestOf(chunks: readonly Uint8Array[]): Promise<Buffer> {
  const hash = createHash('sha256');
  let since = 0;
  for (const c of chunks) {
    for (let at = 0; at < c.length; at += HASH_SLICE_BYTES) {
      const part = c.subarray(at, at + HASH_SLICE_BYTES);
      hash.update(part);
      since += part.length;
      if (since >= HASH_SLICE_BYTES) {
        since = 0;
        await new Promise<void>((r) => setImmediate(r));
      }
    }
  }
  return hash.digest();
}

/** A state file's prefix, checked: where its body starts and the SHA-256 it records (none in the first format). */
function prefixOf(file: Uint8Array, what: string): { buf: Buffer; bodyAt: number; recorded?: Buffer } {
  const buf = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  const magic = buf.subarray(0, 4);
  const legacy = magic.equals(LEGACY_MAGIC);
  if (buf.length < 8 || (!legacy && !magic.equals(MAGIC)))
    throw new StateError(`${what} is not a clink state file (no CLK2 header)`);
  const bodyAt = legacy ? 8 : 8 + DIGEST_BYTES;
  if (buf.length < bodyAt)
    throw new StateError(`${what} is truncated: ${buf.length} bytes, not even its ${bodyAt}-byte prefix`);
  return legacy ? { buf, bodyAt } : { buf, bodyAt, recorded: buf.subarray(8, bodyAt) };
}

function checkDigest(actual: Buffer, recorded: Buffer, length: number, what: string): void {
  if (!actual.equals(recorded)) {
    throw new StateError(
      `${what} is damaged: its SHA-256 is ${actual.toString('hex')}, the file records ${recorded.toString('hex')} (${length} bytes; truncated or changed since it was written)`,
    );
  }
}

/** Read a state file written by encodeStateFile; its byte arrays are views into `file`. */
export function decodeStateFile(file: Uint8Array, what: string): unknown {
  const { buf, bodyAt, recorded } = prefixOf(file, what);
  if (recorded) checkDigest(createHash('sha256').update(buf.subarray(bodyAt)).digest(), recorded, buf.length, what);
  return decodeVerified(buf, bodyAt, what);
}

/**
 * decodeStateFile for a large file on a thread with a liveness tick: the digest is checked in slices
 * between which the event loop runs, so a restore of gigabytes is never taken for a stall.
 */
export async function decodeStateFileSliced(file: Uint8Array, what: string): Promise<unknown> {
  const { buf, bodyAt, recorded } = prefixOf(file, what);
  if (recorded) checkDigest(await digestOf([buf.subarray(bodyAt)]), recorded, buf.length, what);
  return decodeVerified(buf, bodyAt, what);
}

function decodeVerified(buf: Buffer, bodyAt: number, what: string): unknown {
  const headerEnd = bodyAt + buf.readUInt32BE(4);
  if (headerEnd > buf.length)
    throw new StateError(`${what} is truncated: its header needs ${headerEnd} bytes, the file has ${buf.length}`);
  let header: { blobs: number[]; value: unknown };
  try {
    header = headerPackr.unpack(buf.subarray(bodyAt, headerEnd)) as { blobs: number[]; value: unknown };
  } catch (err) {
    throw new StateError(`${what} has a damaged header: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
  const { blobs, value } = header;
  if (!Array.isArray(blobs) || !blobs.every((n) => Number.isInteger(n) && n >= 0))
    throw new StateError(`${what} has a damaged header: no list of data lengths`);
  const views: Uint8Array[] = [];
  let at = headerEnd;
  for (const length of blobs) {
    if (at + length > buf.length)
      throw new StateError(`${what} is truncated: its data ends at byte ${buf.length}, not ${at + length}`);
    views.push(new Uint8Array(buf.buffer, buf.byteOffset + at, length));
    at += length;
  }
  return mapBytes(value, (v) => (v instanceof BlobRef ? views[v.index] : v));
}

/** What was written: the file's size and the SHA-256 of its body (also recorded in its prefix). */
export interface WrittenStateFile {
  bytes: number;
  sha256: string;
}

/**
 * Write `value` as a state file at `path` durably (every byte, fsync, size check, rename, directory
 * fsync), so an acknowledged snapshot survives a crash of the machine. A short or failed write throws
 * a StorageError and leaves nothing behind.
 */
export async function writeStateFile(path: string, value: unknown, fs: DurableFs = nodeFs): Promise<WrittenStateFile> {
  let body: Uint8Array[];
  try {
    body = encodeBody(value);
  } catch (err) {
    // Not the storage's fault: the same state fails the same way every time.
    throw new StateError(`the state in ${basename(path)} cannot be encoded: ${(err as Error).message}`, { cause: err });
  }
  const digest = await digestOf(body);
  const bytes = await writeFileDurably(path, [prefixFor(body[0]!.length, digest), ...body], fs);
  return { bytes, sha256: digest.toString('hex') };
}
