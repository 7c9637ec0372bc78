/** Values and generators derived from the message schema: samples for golden vectors, arbitraries for properties. */
import fc from 'fast-check';
import {
  MESSAGES,
  type Codec,
  type Descriptor,
  type Fields,
  type Message,
  type MessageName,
} from '../../src/protocol/index.js';

const desc = (c: Codec<unknown>): Descriptor => c.desc;

/** A deterministic value with no field at its default, so a golden vector pins every field. */
export function sampleOf(c: Codec<unknown>, path: string): unknown {
  const d = desc(c);
  switch (d.t) {
    case 'u8':
      return 7;
    case 'u16':
      return 4242;
    case 'u32':
      return 123_456;
    case 'i32':
      return -42;
    case 'u64':
      return 2 ** 40 + 5;
    case 'f64':
      return 3.25;
    case 'bool':
      return true;
    case 'bytes':
      return Buffer.from([1, 2, 3, 254]);
    case 'string':
      return d.maxBytes === 64 ? 'ab'.repeat(32) : path;
    case 'enum':
      return d.values[d.values.length - 1];
    case 'list':
      return [sampleOf(d.of, `${path}[0]`), sampleOf(d.of, `${path}[1]`)];
    case 'struct':
      return sampleFields(d.fields, d.name);
  }
}

function sampleFields(fields: Fields, owner: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, sampleOf(f.codec, `${owner}.${k}`)]));
}

export function sampleMessage(name: MessageName): Message {
  return { type: name, ...sampleFields(MESSAGES[name].fields as Fields, name) } as Message;
}

export function arbitraryOf(c: Codec<unknown>): fc.Arbitrary<unknown> {
  const d = desc(c);
  switch (d.t) {
    case 'u8':
      return fc.integer({ min: 0, max: 0xff });
    case 'u16':
      return fc.integer({ min: 0, max: 0xffff });
    case 'u32':
      return fc.integer({ min: 0, max: 0xffff_ffff });
    case 'i32':
      return fc.integer({ min: -0x8000_0000, max: 0x7fff_ffff });
    case 'u64':
      return fc.maxSafeNat();
    case 'f64':
      return fc.double();
    case 'bool':
      return fc.boolean();
    case 'bytes':
      return fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a));
    case 'string': {
      const s = fc.string({ unit: 'grapheme', maxLength: 40 });
      return Number.isFinite(d.maxBytes) ? s.filter((x) => Buffer.byteLength(x) <= d.maxBytes) : s;
    }
    case 'enum':
      return fc.constantFrom(...d.values);
    case 'list':
      return fc.array(arbitraryOf(d.of), { maxLength: 4 });
    case 'struct':
      return arbitraryFields(d.fields);
  }
}

function arbitraryFields(fields: Fields): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, arbitraryOf(f.codec)])), {
    noNullPrototype: true,
  });
}

export const MESSAGE_NAMES = Object.keys(MESSAGES) as MessageName[];

export const arbitraryMessage: fc.Arbitrary<Message> = fc
  .constantFrom(...MESSAGE_NAMES)
  .chain((name) =>
    arbitraryFields(MESSAGES[name].fields as Fields).map((body) => ({ type: name, ...body }) as Message),
  );
