/**
 * A small schema language for message bodies. Each codec writes and reads one value and carries a
 * descriptor, from which docs/protocol.md and the tests' generators are derived, so the layout is
 * written down once.
 *
 * Fields are required or tail. Tail fields follow every required field and decode to their default
 * when the frame (or the struct) ends before them: the additive-tail idiom. Nested structs are
 * length-prefixed, so a struct can grow tail fields too, and an older reader skips what it does not know.
 */
import { FrameDecodeError, type MessageBuilder, type MessageReader } from './wire.js';

export type Descriptor =
  | { t: 'u8' | 'u16' | 'u32' | 'i32' | 'u64' | 'f64' | 'bool' | 'bytes' }
  | { t: 'string'; maxBytes: number }
  | { t: 'enum'; values: readonly string[] }
  | { t: 'list'; of: Codec<unknown> }
  | { t: 'struct'; name: string; fields: Fields };

export interface Codec<T> {
  readonly desc: Descriptor;
  /** The fewest bytes an encoded value can take (bounds container counts). */
  readonly minBytes: number;
  write(b: MessageBuilder, v: T): void;
  read(r: MessageReader, what: string): T;
}

export interface FieldSpec<T, Tail extends boolean = boolean> {
  readonly codec: Codec<T>;
  readonly tail: Tail;
  readonly default: T | undefined;
  readonly doc: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Fields = Record<string, FieldSpec<any>>;
export type ValuesOf<F extends Fields> = { -readonly [K in keyof F]: F[K] extends FieldSpec<infer T> ? T : never };

export function field<T>(codec: Codec<T>, doc = ''): FieldSpec<T, false> {
  return { codec, tail: false, default: undefined, doc };
}

/** A field added after a layout shipped: absent from an older peer's frame, it decodes to `def`. */
export function tail<T>(codec: Codec<T>, def: T, doc = ''): FieldSpec<T, true> {
  return { codec, tail: true, default: def, doc };
}

function prim<T>(
  t: 'u8' | 'u16' | 'u32' | 'i32' | 'u64' | 'f64',
  minBytes: number,
  w: (b: MessageBuilder, v: number) => void,
  r: (r: MessageReader, what: string) => number,
): Codec<T> {
  return {
    desc: { t },
    minBytes,
    write: w as (b: MessageBuilder, v: T) => void,
    read: r as (r: MessageReader, what: string) => T,
  };
}

export const u8 = prim<number>(
  'u8',
  1,
  (b, v) => b.u8(v),
  (r, w) => r.u8(w),
);
export const u16 = prim<number>(
  'u16',
  2,
  (b, v) => b.u16(v),
  (r, w) => r.u16(w),
);
export const u32 = prim<number>(
  'u32',
  4,
  (b, v) => b.u32(v),
  (r, w) => r.u32(w),
);
export const i32 = prim<number>(
  'i32',
  4,
  (b, v) => b.i32(v),
  (r, w) => r.i32(w),
);
/** Unsigned 64-bit, carried as a JS number: values beyond 2^53 are refused on both ends. */
export const u64 = prim<number>(
  'u64',
  8,
  (b, v) => b.u64(v),
  (r, w) => r.u64(w),
);
export const f64 = prim<number>(
  'f64',
  8,
  (b, v) => b.f64(v),
  (r, w) => r.f64(w),
);

export const bool: Codec<boolean> = {
  desc: { t: 'bool' },
  minBytes: 1,
  write: (b, v) => b.u8(v ? 1 : 0),
  read: (r, what) => {
    const v = r.u8(what);
    if (v > 1) throw new FrameDecodeError(`${what} must be 0 or 1, got ${v}`);
    return v === 1;
  },
};

export const bytes: Codec<Uint8Array> = {
  desc: { t: 'bytes' },
  minBytes: 4,
  write: (b, v) => b.bytes(v),
  read: (r, what) => r.bytes(what),
};

/** A UTF-8 string, optionally capped: a longer one is refused at decode. */
export function str(maxBytes = Infinity): Codec<string> {
  return {
    desc: { t: 'string', maxBytes },
    minBytes: 4,
    write: (b, v) => {
      if (Buffer.byteLength(v) > maxBytes)
        throw new RangeError(`string of ${Buffer.byteLength(v)} bytes exceeds its ${maxBytes}-byte cap`);
      b.string(v);
    },
    read: (r, what) => r.string(what, maxBytes),
  };
}
export const string = str();

/** One of a fixed list of names, sent as its index (u8). */
export function enumOf<const V extends readonly string[]>(values: V): Codec<V[number]> {
  return {
    desc: { t: 'enum', values },
    minBytes: 1,
    write: (b, v) => {
      const i = values.indexOf(v);
      if (i < 0) throw new RangeError(`'${v}' is not one of ${values.join(', ')}`);
      b.u8(i);
    },
    read: (r, what) => {
      const i = r.u8(what);
      const v = values[i];
      if (v === undefined) throw new FrameDecodeError(`${what} is ${i}, not one of the ${values.length} known values`);
      return v;
    },
  };
}

export function list<T>(of: Codec<T>): Codec<T[]> {
  return {
    desc: { t: 'list', of: of as Codec<unknown> },
    minBytes: 4,
    write: (b, v) => {
      b.u32(v.length);
      for (const x of v) of.write(b, x);
    },
    read: (r, what) => {
      const n = r.count(what, of.minBytes);
      const out = new Array<T>(n);
      for (let i = 0; i < n; i++) out[i] = of.read(r, `${what}[${i}]`);
      return out;
    },
  };
}

function checkFieldOrder(name: string, fields: Fields): void {
  let seenTail = false;
  for (const [k, f] of Object.entries(fields)) {
    if (f.tail) seenTail = true;
    else if (seenTail) throw new Error(`${name}.${k}: a required field cannot follow a tail field`);
  }
}

function defaultOf<T>(f: FieldSpec<T>): T {
  const d = f.default as T;
  return (Array.isArray(d) ? [...d] : d) as T;
}

/** Write the fields of `v` in declaration order. */
export function writeFields<F extends Fields>(fields: F, b: MessageBuilder, v: ValuesOf<F>, owner: string): void {
  for (const k in fields) {
    const x = v[k];
    if (x === undefined) throw new RangeError(`${owner}.${k} is missing`);
    fields[k]!.codec.write(b, x);
  }
}

/** Read fields in declaration order; tail fields the input ends before take their defaults. */
export function readFields<F extends Fields>(fields: F, r: MessageReader, owner: string): ValuesOf<F> {
  const out = {} as Record<string, unknown>;
  for (const k in fields) {
    const f = fields[k]!;
    out[k] = f.tail && r.eof() ? defaultOf(f) : f.codec.read(r, `${owner}.${k}`);
  }
  return out as ValuesOf<F>;
}

/** A nested record: [u32 length][fields], so it can grow tail fields like a message can. */
export function struct<F extends Fields>(name: string, fields: F): Codec<ValuesOf<F>> {
  checkFieldOrder(name, fields);
  return {
    desc: { t: 'struct', name, fields },
    minBytes: 4,
    write: (b, v) => {
      const at = b.reserveU32();
      const start = b.length;
      writeFields(fields, b, v, name);
      b.patchU32(at, b.length - start);
    },
    read: (r, what) => {
      const n = r.u32(`${what} length`);
      return readFields(fields, r.sub(n, what), what);
    },
  };
}

export { checkFieldOrder };
