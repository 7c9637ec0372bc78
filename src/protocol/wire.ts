/**
 * Framing primitives. A frame is a 4-byte big-endian length, then a payload whose first byte is the
 * message kind. Strings are [u32 BE length][UTF-8 bytes]; all multi-byte integers are big-endian.
 * MessageReader bounds-checks every read and throws FrameDecodeError on truncation; it never allocates
 * more than the bytes it was given.
 */
import { isUtf8 } from 'node:buffer';
import { ClinkError } from '../errors.js';

/** Largest frame a peer may send; refused on the header alone. */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;
/** Largest first frame of a connection (Register or HelloClient), read before the peer is known. */
export const MAX_FIRST_FRAME_BYTES = 64 * 1024;
/** Largest worker_id or data_host in a Register. */
export const MAX_REGISTER_STRING_BYTES = 255;
/** Frame bodies are read, and outboxes write, in chunks of this size. */
export const FRAME_CHUNK_BYTES = 64 * 1024;
export const FRAME_HEADER_BYTES = 4;

/** A frame that does not decode: truncated, a count beyond the bytes left, a bad value, an unknown kind. */
export class FrameDecodeError extends ClinkError {
  /** `cause` is set only when the safety net in decodeMessage caught something a decoder did not check. */
  constructor(message: string, options?: { cause?: unknown }) {
    super('CLINK_ERR_MALFORMED_FRAME', message, options);
  }
}

/** A frame header claiming more than the cap. Nothing is allocated for it. */
export class FrameTooLargeError extends ClinkError {
  readonly claimedBytes: number;
  constructor(claimedBytes: number, capBytes: number) {
    super('CLINK_ERR_FRAME_TOO_LARGE', `frame header claims ${claimedBytes} bytes, above the ${capBytes}-byte cap`);
    this.claimedBytes = claimedBytes;
  }
}

export class MessageBuilder {
  private buf: Buffer;
  private len = 0;

  constructor(initialBytes = 256) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  get length(): number {
    return this.len;
  }

  u8(v: number): this {
    this.ensure(1);
    this.buf.writeUInt8(v, this.len);
    this.len += 1;
    return this;
  }

  u16(v: number): this {
    this.ensure(2);
    this.buf.writeUInt16BE(v, this.len);
    this.len += 2;
    return this;
  }

  u32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.len);
    this.len += 4;
    return this;
  }

  i32(v: number): this {
    this.ensure(4);
    this.buf.writeInt32BE(v, this.len);
    this.len += 4;
    return this;
  }

  u64(v: number): this {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`u64 field must be a safe whole number >= 0, got ${v}`);
    this.ensure(8);
    this.buf.writeUInt32BE(Math.floor(v / 0x1_0000_0000), this.len);
    this.buf.writeUInt32BE(v >>> 0, this.len + 4);
    this.len += 8;
    return this;
  }

  f64(v: number): this {
    this.ensure(8);
    this.buf.writeDoubleBE(v, this.len);
    this.len += 8;
    return this;
  }

  bytes(v: Uint8Array): this {
    this.u32(v.length);
    this.ensure(v.length);
    this.buf.set(v, this.len);
    this.len += v.length;
    return this;
  }

  string(v: string): this {
    const n = Buffer.byteLength(v, 'utf8');
    this.u32(n);
    this.ensure(n);
    this.buf.write(v, this.len, n, 'utf8');
    this.len += n;
    return this;
  }

  /** Reserve a u32 to be filled in later (a nested struct's length). Returns its offset. */
  reserveU32(): number {
    this.ensure(4);
    const at = this.len;
    this.len += 4;
    return at;
  }

  patchU32(at: number, v: number): void {
    this.buf.writeUInt32BE(v, at);
  }

  /** The bytes written so far (a view, valid until the next write). */
  view(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}

export class MessageReader {
  private pos: number;
  private readonly dv: DataView;

  constructor(
    private readonly buf: Uint8Array,
    start = 0,
    private readonly end = buf.length,
    dataView?: DataView,
  ) {
    this.pos = start;
    this.dv = dataView ?? new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  eof(): boolean {
    return this.pos >= this.end;
  }

  get offset(): number {
    return this.pos;
  }

  private need(n: number, what: string): void {
    if (this.end - this.pos < n) {
      throw new FrameDecodeError(
        `truncated frame: ${what} needs ${n} bytes at offset ${this.pos}, ${this.end - this.pos} left`,
      );
    }
  }

  u8(what = 'u8'): number {
    this.need(1, what);
    return this.buf[this.pos++]!;
  }

  u16(what = 'u16'): number {
    this.need(2, what);
    const v = this.dv.getUint16(this.pos);
    this.pos += 2;
    return v;
  }

  u32(what = 'u32'): number {
    this.need(4, what);
    const v = this.dv.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  i32(what = 'i32'): number {
    this.need(4, what);
    const v = this.dv.getInt32(this.pos);
    this.pos += 4;
    return v;
  }

  u64(what = 'u64'): number {
    this.need(8, what);
    const hi = this.dv.getUint32(this.pos);
    const lo = this.dv.getUint32(this.pos + 4);
    this.pos += 8;
    const v = hi * 0x1_0000_0000 + lo;
    if (!Number.isSafeInteger(v)) throw new FrameDecodeError(`${what} is ${hi}:${lo}, beyond 2^53`);
    return v;
  }

  f64(what = 'f64'): number {
    this.need(8, what);
    const v = this.dv.getFloat64(this.pos);
    this.pos += 8;
    return v;
  }

  /** A length-prefixed byte string, as a view into the frame (no copy). */
  bytes(what = 'bytes', maxBytes = Infinity): Uint8Array {
    const n = this.u32(`${what} length`);
    if (n > maxBytes) throw new FrameDecodeError(`${what} is ${n} bytes, above the ${maxBytes}-byte cap`);
    this.need(n, what);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }

  string(what = 'string', maxBytes = Infinity): string {
    const b = this.bytes(what, maxBytes);
    const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    if (!isUtf8(buf)) throw new FrameDecodeError(`${what} is not valid UTF-8`);
    return buf.toString('utf8');
  }

  /**
   * A container count. Each element takes at least `minElementBytes` on the wire, so a count that
   * cannot fit in the bytes left is malformed by construction: no allocation follows a lying count.
   */
  count(what: string, minElementBytes = 1): number {
    const n = this.u32(`${what} count`);
    if (n * minElementBytes > this.remaining) {
      throw new FrameDecodeError(`${what} count ${n} cannot fit in the ${this.remaining} bytes left`);
    }
    return n;
  }

  /** A reader over the next `n` bytes; this reader moves past them. */
  sub(n: number, what: string): MessageReader {
    this.need(n, what);
    const r = new MessageReader(this.buf, this.pos, this.pos + n, this.dv);
    this.pos += n;
    return r;
  }
}
