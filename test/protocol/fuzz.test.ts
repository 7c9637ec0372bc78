import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  decodeMessage,
  decodeRecordBatch,
  encodeMessage,
  encodeRecordBatch,
  FrameDecodeError,
  MESSAGES,
  type Codec,
  type Fields,
  type Message,
} from '../../src/protocol/index.js';
import { arbitraryMessage } from './gen.js';

/**
 * What a decoded value holds that came off the wire: string and byte lengths and list counts. A
 * decoder that allocates only for bytes that exist keeps this within the payload's size.
 */
function weight(c: Codec<unknown>, v: unknown): number {
  const d = c.desc;
  switch (d.t) {
    case 'string':
      return (v as string).length;
    case 'bytes':
      return (v as Uint8Array).length;
    case 'list':
      return (v as unknown[]).length + (v as unknown[]).reduce<number>((n, x) => n + weight(d.of, x), 0);
    case 'struct':
      return fieldsWeight(d.fields, v as Record<string, unknown>);
    default:
      return 0;
  }
}

function fieldsWeight(fields: Fields, v: Record<string, unknown>): number {
  return Object.entries(fields).reduce((n, [k, f]) => n + weight(f.codec, v[k]), 0);
}

/** Decode must either succeed within the payload's size or throw the typed error; nothing else. */
function decodeOrTypedError(payload: Uint8Array): void {
  let m: Message;
  try {
    m = decodeMessage(payload);
  } catch (err) {
    if (!(err instanceof FrameDecodeError))
      throw new Error(`escaped as ${(err as Error)?.constructor?.name}: ${(err as Error)?.message}`);
    // The decoder must have caught the problem itself, not the last-resort wrapper in decodeMessage.
    if (err.cause !== undefined) throw new Error(`unchecked decoder failure: ${err.message}`);
    return;
  }
  const w = fieldsWeight(MESSAGES[m.type].fields as Fields, m as unknown as Record<string, unknown>);
  // A few bytes of slack for tail defaults ('{}' for params) that no wire byte paid for.
  assert.ok(w <= payload.length + 8, `${m.type}: decoded weight ${w} from a ${payload.length}-byte payload`);
}

const kinds = Object.values(MESSAGES).map((d) => d.kind);

type Mutation = { kind: 'flip' | 'truncate' | 'insert' | 'inflate'; at: number; value: number; bytes: number[] };

function mutate(payload: Buffer, m: Mutation): Buffer {
  const at = payload.length === 0 ? 0 : m.at % payload.length;
  switch (m.kind) {
    case 'flip': {
      const b = Buffer.from(payload);
      if (b.length > 0) b[at] = b[at]! ^ (1 << (m.value % 8));
      return b;
    }
    case 'truncate':
      return payload.subarray(0, at);
    case 'insert':
      return Buffer.concat([payload.subarray(0, at), Buffer.from(m.bytes), payload.subarray(at)]);
    case 'inflate': {
      // Make a 4-byte window claim a huge length or count.
      const b = Buffer.from(payload);
      if (b.length >= at + 4) b.writeUInt32BE([0xffffffff, 0x80000000, 0x7fffffff, 0x00ffffff][m.value % 4]!, at);
      return b;
    }
  }
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom('flip', 'truncate', 'insert', 'inflate'),
  at: fc.nat(),
  value: fc.nat(),
  bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 8 }),
});

describe('fuzzing the decoders', () => {
  test('40,000 random payloads (half of them with a known kind byte) decode or fail with the typed error', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.constantFrom(...kinds), fc.uint8Array({ maxLength: 96 }), (known, kind, rest) => {
        decodeOrTypedError(known ? Buffer.concat([Buffer.from([kind]), rest]) : Buffer.from(rest));
      }),
      { numRuns: 40_000 },
    );
  });

  test('60,000 mutated valid frames of every kind decode or fail with the typed error', () => {
    fc.assert(
      fc.property(arbitraryMessage, fc.array(mutation, { minLength: 1, maxLength: 3 }), (m, ms) => {
        let payload = encodeMessage(m);
        for (const x of ms) payload = mutate(payload, x);
        decodeOrTypedError(payload);
      }),
      { numRuns: 60_000 },
    );
  });

  test('record batches: round trip, and mutated batches fail only with the typed error', () => {
    const record = fc.record(
      { id: fc.integer(), name: fc.string(), tags: fc.array(fc.string(), { maxLength: 3 }) },
      { noNullPrototype: true },
    );
    fc.assert(
      fc.property(fc.array(record, { maxLength: 20 }), fc.boolean(), (values, stamped) => {
        const ts = values.map((_, i) => (stamped ? 1_000 + i : Number.NEGATIVE_INFINITY));
        const back = decodeRecordBatch(encodeRecordBatch(values, ts));
        assert.deepEqual(back.values, values);
        assert.deepEqual(back.timestamps, ts);
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 5 }), mutation, (values, m) => {
        const body = mutate(
          encodeRecordBatch(
            values,
            values.map(() => 5),
          ),
          m,
        );
        try {
          decodeRecordBatch(body);
        } catch (err) {
          assert.ok(
            err instanceof FrameDecodeError,
            `escaped as ${(err as Error).constructor.name}: ${(err as Error).message}`,
          );
        }
      }),
      { numRuns: 5_000 },
    );
  });

  test('a batch claiming 2^31 records in a few bytes is refused at once', () => {
    const body = Buffer.from([0x80, 0, 0, 0, 0, 0x90]);
    assert.throws(
      () => decodeRecordBatch(body),
      (e: unknown) => e instanceof FrameDecodeError && /cannot fit/.test(e.message),
    );
  });
});
