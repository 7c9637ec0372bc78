// Columnar record batches (design record 018) against msgpackr, the codec they stand in for: the same
// values back for any batch, columnar or not; columns chosen only for the shapes they are meant for.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Packr, Unpackr } from 'msgpackr';
import {
  decodeRecordBatch,
  encodeRecordBatch,
  FrameDecodeError,
  MAX_RECORDS_PAST_BYTES,
} from '../../src/protocol/index.js';

const packr = new Packr({ useRecords: true, moreTypes: true });
const unpackr = new Unpackr({ useRecords: true, moreTypes: true });
const viaMsgpack = (values: unknown[]): unknown => unpackr.unpack(packr.pack(values));
const columnar = (b: Buffer): boolean => (b[4]! & 2) !== 0;

/** msgpackr writes -0 as the integer 0; columns keep it. Compared with msgpackr, -0 reads as 0. */
function zeroed(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (Array.isArray(v)) return v.map(zeroed);
  if (v instanceof Map || v instanceof Set || v instanceof Date || ArrayBuffer.isView(v)) return v;
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, zeroed(x)]));
  return v;
}

const number = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 2 ** 31, -(2 ** 31), 2 ** 53),
);
// Strings of every kind: ASCII, any code point, and lone surrogates (not valid UTF-16, packed instead).
const string = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'binary-ascii' }),
);
const scalar = fc.oneof(number, string, fc.boolean());
const anyValue = fc.oneof(
  scalar,
  fc.constant(null),
  fc.constant(undefined),
  fc.array(scalar, { maxLength: 3 }),
  fc.dictionary(fc.string(), scalar, { maxKeys: 2, noNullPrototype: true }),
);
const fieldName = fc.oneof(
  fc.constantFrom('id', 'price', 'name', '0', '17', '', 'é', 'constructor', 'a b'),
  fc.string({ maxLength: 8 }),
);

/** `b` with byte `at` set to `byte` and `cut` x 7 bytes cut off its end decodes, or fails only with the typed error. */
function decodesOrRefuses(b: Buffer, at: number, byte: number, cut: number): void {
  b[at % b.length] = byte;
  try {
    decodeRecordBatch(cut > 0 ? b.subarray(0, Math.max(0, b.length - cut * 7)) : b);
  } catch (err) {
    assert.ok(
      err instanceof FrameDecodeError,
      `escaped as ${(err as Error).constructor.name}: ${(err as Error).message}`,
    );
  }
}

/** A batch of records with one field list, each field of one kind of value (or any value). */
const regularBatch = fc
  .uniqueArray(fieldName, { minLength: 1, maxLength: 6, selector: (k) => k })
  .filter((names) => !names.includes('__proto__'))
  .chain((names) =>
    fc.tuple(...names.map(() => fc.constantFrom(number, string, fc.boolean(), fc.integer(), anyValue))).chain((kinds) =>
      fc.array(
        fc.tuple(...kinds).map((vals) => Object.fromEntries(names.map((n, i) => [n, vals[i]]))),
        { minLength: 1, maxLength: 40 },
      ),
    ),
  );

describe('columnar record batches', () => {
  test('any batch of one field list decodes to what msgpackr gives, columnar or not; with and without timestamps', () => {
    let runs = 0;
    let columnarRuns = 0;
    fc.assert(
      fc.property(regularBatch, fc.boolean(), (values, stamped) => {
        const ts = values.map((_, i) => (stamped ? 1_000 + i : Number.NEGATIVE_INFINITY));
        const encoded = encodeRecordBatch(values, ts, { columns: true });
        runs++;
        if (columnar(encoded)) columnarRuns++;
        const back = decodeRecordBatch(encoded);
        assert.deepStrictEqual(zeroed(back.values), zeroed(viaMsgpack(values)));
        assert.deepStrictEqual(back.timestamps, ts);
      }),
      { numRuns: 3_000 },
    );
    assert.ok(columnarRuns > runs * 0.9, `${columnarRuns} of ${runs} batches columnar`);
  });

  test('batches of every shape (primitives, arrays, differing fields, nested) decode to what msgpackr gives', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(anyValue, fc.object({ maxDepth: 2 })), { minLength: 1, maxLength: 20 }),
        (values) => {
          const back = decodeRecordBatch(
            encodeRecordBatch(
              values,
              values.map(() => Number.NEGATIVE_INFINITY),
              { columns: true },
            ),
          );
          assert.deepStrictEqual(zeroed(back.values), zeroed(viaMsgpack(values)));
        },
      ),
      { numRuns: 3_000 },
    );
  });

  test('typed columns keep every number exactly, -0 and NaN included', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record(
            { a: number, b: fc.integer(), s: fc.string({ unit: 'grapheme' }), f: fc.boolean() },
            { noNullPrototype: true },
          ),
          { minLength: 1, maxLength: 50 },
        ),
        (values) => {
          const b = encodeRecordBatch(
            values,
            values.map(() => Number.NEGATIVE_INFINITY),
            { columns: true },
          );
          assert.ok(columnar(b));
          assert.deepStrictEqual(decodeRecordBatch(b).values, values);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  test('batches one after another, of any size (past the rows a number column is read into in place too), keep every number', () => {
    // Each number field is read into a Float64Array kept per field position up to 4,096 rows: a batch
    // after a larger one, or larger than that, must read back only its own values.
    const lengths = fc.array(fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(4_095, 4_096, 4_097, 6_000)), {
      minLength: 1,
      maxLength: 4,
    });
    fc.assert(
      fc.property(lengths, fc.integer(), fc.boolean(), (sizes, seed, constants) => {
        for (const [b, n] of sizes.entries()) {
          // An integer column, a double column, one that turns non-number at its end, one of one value.
          const values = Array.from({ length: n }, (_, i) => ({
            a: (seed + i * 7_919 + b) | 0,
            b: (seed % 1_000) + i / 8,
            c: i === n - 1 && b % 2 === 1 ? 'x' : i,
            d: 5,
          }));
          const batch = encodeRecordBatch(
            values,
            values.map(() => Number.NEGATIVE_INFINITY),
            { columns: true, constants },
          );
          assert.ok(columnar(batch));
          assert.deepStrictEqual(decodeRecordBatch(batch).values, values);
        }
      }),
      { numRuns: 60 },
    );
  });

  test('columns only where they are meant to be; msgpackr for the rest', () => {
    const ts = (n: number) => Array.from({ length: n }, () => Number.NEGATIVE_INFINITY);
    const bids = [
      { auction: 1, price: 2.5, channel: 'x' },
      { auction: 2, price: 3, channel: 'é' },
    ];
    assert.ok(columnar(encodeRecordBatch(bids, ts(2), { columns: true })), 'plain objects of one field list');
    assert.ok(!columnar(encodeRecordBatch(bids, ts(2))), 'not unless the receiver reads them');
    assert.ok(!columnar(encodeRecordBatch([1, 2], ts(2), { columns: true })), 'primitives');
    assert.ok(!columnar(encodeRecordBatch([{ a: 1 }, { b: 1 }], ts(2), { columns: true })), 'differing fields');
    assert.ok(
      !columnar(
        encodeRecordBatch(
          [
            { a: 1, b: 2 },
            { b: 2, a: 1 },
          ],
          ts(2),
          { columns: true },
        ),
      ),
      'the same fields in another order',
    );
    assert.ok(!columnar(encodeRecordBatch([{ a: 1 }, { a: 1, b: 2 }], ts(2), { columns: true })), 'a field more');
    assert.ok(!columnar(encodeRecordBatch([new Date(0), new Date(1)], ts(2), { columns: true })), 'class instances');
    assert.ok(!columnar(encodeRecordBatch([{}], ts(1), { columns: true })), 'no fields');
    const proto = JSON.parse('[{"__proto__": 1}]') as unknown[];
    assert.ok(!columnar(encodeRecordBatch(proto, ts(1), { columns: true })), 'a field named __proto__');
    assert.deepStrictEqual(
      decodeRecordBatch(encodeRecordBatch(proto, ts(1), { columns: true })).values,
      viaMsgpack(proto),
    );
  });

  test('a prefix leaves room for a frame header, and the batch after it is the same', () => {
    const values = [
      { a: 1.5, b: 'x' },
      { a: 2.5, b: 'yy' },
    ];
    const ts = [5, 6];
    for (const columns of [false, true]) {
      const plain = encodeRecordBatch(values, ts, { columns });
      const prefixed = encodeRecordBatch(values, ts, { columns, prefix: 9 });
      assert.deepEqual(prefixed.subarray(9), plain);
    }
  });

  test('batches encoded one after another (cut from shared memory) each start at a multiple of 8 and are the same bytes as alone', () => {
    const rows = (n: number): unknown[] =>
      Array.from({ length: n }, (_, i) => ({ id: i, price: i + 0.5, name: 'x'.repeat(i % 5) }));
    const ts = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
    const reference = new Map<string, Buffer>();
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3_000 }), fc.integer({ min: 0, max: 31 }), (n, prefix) => {
        const b = encodeRecordBatch(rows(n), ts(n), { columns: true, prefix });
        assert.equal((b.byteOffset + prefix) % 8, 0, 'the batch starts aligned in memory');
        const key = `${n}`;
        const body = Buffer.from(b.subarray(prefix));
        if (!reference.has(key)) reference.set(key, body);
        assert.deepEqual(body, reference.get(key), 'padding is zero whatever was cut before');
        assert.deepEqual(decodeRecordBatch(b.subarray(prefix)).values, rows(n));
        // Read one byte off alignment: its columns are copied (to memory reused by every batch) to be read.
        const shifted = Buffer.concat([Buffer.alloc(1), body]).subarray(1);
        assert.deepEqual(decodeRecordBatch(shifted).values, rows(n));
      }),
      { numRuns: 400 },
    );
  });

  test('a field list read once serves the batches after it; a field list named twice is refused however often it comes', () => {
    const a = encodeRecordBatch([{ x: 1, y: 'p' }], [1], { columns: true });
    const b = encodeRecordBatch([{ y: 2, x: 'q' }], [2], { columns: true });
    // The same bytes as `a` with its second name made "x": a field named twice.
    const twice = Buffer.from(a);
    twice[twice.indexOf('y', 7)] = 'x'.charCodeAt(0);
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(decodeRecordBatch(a).values, [{ x: 1, y: 'p' }]);
      assert.throws(
        () => decodeRecordBatch(twice),
        (err: Error) => err instanceof FrameDecodeError && /named twice/.test(err.message),
      );
      assert.deepEqual(decodeRecordBatch(b).values, [{ y: 2, x: 'q' }]);
      assert.deepEqual(
        Object.keys(decodeRecordBatch(b).values[0] as object),
        ['y', 'x'],
        'the field order of its own list',
      );
    }
    // A field list too long to keep is read each time, and reads the same.
    const long = { ['n'.repeat(5_000)]: 1, m: 'z' };
    const c = encodeRecordBatch([long, long], [3, 4], { columns: true });
    assert.ok(columnar(c));
    for (let round = 0; round < 2; round++) assert.deepEqual(decodeRecordBatch(c).values, [long, long]);
  });

  test('a mutated columnar batch fails only with the typed error', () => {
    const record = fc.record(
      {
        id: fc.integer(),
        price: fc.double(),
        name: fc.string(),
        ok: fc.boolean(),
        tags: fc.array(fc.string(), { maxLength: 2 }),
      },
      { noNullPrototype: true },
    );
    fc.assert(
      fc.property(
        fc.array(record, { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        fc.nat({ max: 3 }),
        fc.boolean(),
        (values, at, byte, cut, constants) => {
          // With constants, records share their id and timestamp, so columns and the timestamp are single values.
          const batch = constants ? values.map((v) => ({ ...v, id: 7 })) : values;
          const ts = batch.map(() => (constants ? 12 : Number.NEGATIVE_INFINITY));
          const b = Buffer.from(encodeRecordBatch(batch, ts, { columns: true, constants }));
          decodesOrRefuses(b, at, byte, cut);
        },
      ),
      { numRuns: 10_000 },
    );
  });

  test('golden vectors: a batch of bids as msgpack and as columns, pinned byte for byte', async () => {
    const bids = [
      {
        auction: 1000,
        bidder: 2001,
        price: 1.5,
        channel: 'Apple',
        url: 'https://x/é',
        dateTime: 1_700_000_000_000,
        flagged: false,
      },
      { auction: 1001, bidder: -3, price: 250, channel: 'Baidu', url: '', dateTime: 1_700_000_000_013, flagged: true },
      { auction: 1002, bidder: 7, price: -0, channel: 'Google', url: 'u', dateTime: 1_700_000_000_026, flagged: false },
    ];
    const ts = [1, 2, 3];
    for (const [file, columns] of [
      ['msgpack-bids', false],
      ['columnar-bids', true],
    ] as const) {
      const url = new URL(`../vectors/batches/${file}.hex`, import.meta.url);
      const bytes = encodeRecordBatch(bids, ts, { columns });
      if (process.env.UPDATE_VECTORS === '1') await writeFile(url, bytes.toString('hex') + '\n');
      const pinned = Buffer.from((await readFile(url, 'utf8')).trim(), 'hex');
      assert.equal(bytes.toString('hex'), pinned.toString('hex'), `${file}: the batch encoding changed`);
      const back = decodeRecordBatch(pinned);
      assert.deepStrictEqual(back.values, columns ? bids : zeroed(bids));
      assert.deepStrictEqual(back.timestamps, ts);
    }
  });

  test('with constants, any batch decodes to what it does without them; one-valued number columns and shared timestamps shrink', () => {
    // Batches whose columns and timestamps are often one value: a number drawn once per column, or per record.
    const oneValued = regularBatch.chain((values) =>
      fc.tuple(
        fc.constant(values),
        fc.array(number, { minLength: 6, maxLength: 6 }),
        fc.boolean(),
        fc.oneof(number, fc.constant(Number.NEGATIVE_INFINITY)),
      ),
    );
    let shrunk = 0;
    fc.assert(
      fc.property(oneValued, fc.boolean(), ([values, fixed, fix, stamp], perRecord) => {
        const names = Object.keys(values[0] as object);
        const batch = fix
          ? values.map((v) =>
              Object.fromEntries(
                names.map((n, i) => [n, i < fixed.length ? fixed[i] : (v as Record<string, unknown>)[n]]),
              ),
            )
          : values;
        const ts = batch.map((_, i) => (perRecord ? 1_000 + i : stamp));
        const plain = encodeRecordBatch(batch, ts, { columns: true });
        const packed = encodeRecordBatch(batch, ts, { columns: true, constants: true });
        if (packed.length < plain.length) shrunk++;
        assert.ok(packed.length <= plain.length, 'never larger');
        const back = decodeRecordBatch(packed);
        assert.deepStrictEqual(back, decodeRecordBatch(plain));
        assert.deepStrictEqual(
          decodeRecordBatch(encodeRecordBatch(batch, ts, { constants: true })),
          decodeRecordBatch(encodeRecordBatch(batch, ts)),
          'msgpack values with one timestamp',
        );
      }),
      { numRuns: 3_000 },
    );
    assert.ok(shrunk > 100, `${shrunk} batches smaller`);
  });

  test('a window result batch (start, end and timestamp shared) is 8 bytes a record; 0 and -0, NaN stay per record', () => {
    const n = 1_000;
    const results = Array.from({ length: n }, (_, i) => ({
      key: 1_000 + i,
      count: 1 + (i % 7),
      start: 1_700_000_000_000,
      end: 1_700_000_010_000,
    }));
    const ts = results.map(() => 1_700_000_009_999);
    const b = encodeRecordBatch(results, ts, { columns: true, constants: true });
    assert.ok(b.length < 8 * n + 100, `${b.length} bytes`);
    assert.ok(
      encodeRecordBatch(results, ts, { columns: true }).length > 32 * n,
      'against 32 a record without constants',
    );
    assert.deepStrictEqual(decodeRecordBatch(b), { values: results, timestamps: ts });
    for (const column of [
      [0, -0],
      [-0, -0],
      [NaN, NaN],
      [1, 1.5],
    ]) {
      const values = column.map((x) => ({ x }));
      const back = decodeRecordBatch(encodeRecordBatch(values, [1, 1], { columns: true, constants: true })).values as {
        x: number;
      }[];
      assert.ok(
        back.every((v, i) => Object.is(v.x, column[i])),
        `${String(column)} read back as ${back.map((v) => String(Object.is(v.x, -0) ? '-0' : v.x)).join(',')}`,
      );
    }
    assert.ok(
      Object.is(
        decodeRecordBatch(encodeRecordBatch([{ x: -0 }, { x: -0 }], [-0, -0], { columns: true, constants: true }))
          .timestamps[1],
        -0,
      ),
    );
  });

  test('one field list with every set of constant columns (more sets than a shape keeps code for) reads back each time', () => {
    const fields = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (let round = 0; round < 2; round++) {
      for (let mask = 0; mask < 64; mask++) {
        const values = [0, 1, 2].map((r) =>
          Object.fromEntries(fields.map((f, i) => [f, mask & (1 << i) ? 7 : r * 10 + i])),
        );
        const b = encodeRecordBatch(values, [1, 1, 1], { columns: true, constants: true });
        assert.deepStrictEqual(decodeRecordBatch(b).values, values, `mask ${mask.toString(2)}`);
      }
    }
  });

  test('a batch of constant columns may hold more records than bytes, up to a bound; a count past it is refused', () => {
    const many = Array.from({ length: MAX_RECORDS_PAST_BYTES }, () => ({ a: 7 }));
    const b = encodeRecordBatch(
      many,
      many.map(() => 5),
      { columns: true, constants: true },
    );
    assert.ok(b.length < 64, `${b.length} bytes for ${many.length} records`);
    assert.equal(decodeRecordBatch(b).values.length, MAX_RECORDS_PAST_BYTES);
    const lying = Buffer.from(b);
    lying.writeUInt32BE(MAX_RECORDS_PAST_BYTES + 1, 0);
    assert.throws(() => decodeRecordBatch(lying), FrameDecodeError);
    const more = [...many, { a: 7 }];
    assert.ok(
      encodeRecordBatch(
        more,
        more.map(() => 5),
        { columns: true, constants: true },
      ).length > more.length,
      'past the bound a batch is written with a value per record',
    );
    const noStamps = Buffer.from(encodeRecordBatch([{ a: 1 }, { a: 1 }], [5, 5], { columns: true, constants: true }));
    noStamps[4] = 2 | 4; // one timestamp, but no timestamps
    assert.throws(() => decodeRecordBatch(noStamps), FrameDecodeError);
  });

  test('golden vector: a window result batch with constant columns and one timestamp, pinned byte for byte', async () => {
    const results = [
      { key: 1000, count: 3, start: 1_700_000_000_000, end: 1_700_000_010_000 },
      { key: 1007, count: 1, start: 1_700_000_000_000, end: 1_700_000_010_000 },
      { key: -4, count: 12, start: 1_700_000_000_000, end: 1_700_000_010_000 },
    ];
    const ts = [1_700_000_009_999, 1_700_000_009_999, 1_700_000_009_999];
    const url = new URL('../vectors/batches/columnar-constants.hex', import.meta.url);
    const bytes = encodeRecordBatch(results, ts, { columns: true, constants: true });
    if (process.env.UPDATE_VECTORS === '1') await writeFile(url, bytes.toString('hex') + '\n');
    const pinned = Buffer.from((await readFile(url, 'utf8')).trim(), 'hex');
    assert.equal(bytes.toString('hex'), pinned.toString('hex'), 'the batch encoding changed');
    assert.deepStrictEqual(decodeRecordBatch(pinned), { values: results, timestamps: ts });
  });
});

describe('tuples as columns (arrays of one length: a pre-aggregation partials)', () => {
  const tuples = (b: Buffer): boolean => (b[4]! & 10) === 10;
  /** A batch of arrays of one length, each position of one kind of value (or any value). */
  const tupleBatch = fc
    .integer({ min: 1, max: 6 })
    .chain((width) =>
      fc.array(fc.constantFrom(number, string, fc.boolean(), fc.integer(), anyValue), {
        minLength: width,
        maxLength: width,
      }),
    )
    .chain((kinds) =>
      fc.array(
        fc.tuple(...kinds).map((vals) => [...vals]),
        { minLength: 1, maxLength: 40 },
      ),
    );

  test('any batch of arrays of one length decodes to what msgpackr gives, columnar with tuples; with and without timestamps and constants', () => {
    let runs = 0;
    let columnarRuns = 0;
    fc.assert(
      fc.property(tupleBatch, fc.boolean(), fc.boolean(), (values, stamped, constants) => {
        const ts = values.map((_, i) => (stamped ? 1_000 + (constants ? 0 : i) : Number.NEGATIVE_INFINITY));
        const encoded = encodeRecordBatch(values, ts, { columns: true, constants, tuples: true });
        runs++;
        if (tuples(encoded)) columnarRuns++;
        const back = decodeRecordBatch(encoded);
        assert.deepStrictEqual(zeroed(back.values), zeroed(viaMsgpack(values)));
        assert.deepStrictEqual(back.timestamps, ts);
        assert.ok(
          !tuples(encodeRecordBatch(values, ts, { columns: true, constants })),
          'not unless the receiver reads them',
        );
      }),
      { numRuns: 3_000 },
    );
    assert.ok(columnarRuns > runs * 0.9, `${columnarRuns} of ${runs} batches columnar`);
  });

  test('batches of every shape (arrays of differing lengths, sparse arrays, nested, objects) decode to what msgpackr gives with tuples read', () => {
    const shapes = fc.oneof(
      anyValue,
      fc.object({ maxDepth: 2 }),
      fc.array(scalar, { minLength: 2, maxLength: 2 }),
      fc.sparseArray(scalar, { minNumElements: 1, maxLength: 3 }),
    );
    fc.assert(
      fc.property(fc.array(shapes, { minLength: 1, maxLength: 20 }), (values) => {
        const back = decodeRecordBatch(
          encodeRecordBatch(
            values,
            values.map(() => Number.NEGATIVE_INFINITY),
            { columns: true, tuples: true },
          ),
        );
        assert.deepStrictEqual(zeroed(back.values), zeroed(viaMsgpack(values)));
      }),
      { numRuns: 3_000 },
    );
  });

  test('tuples only where meant; a tuple batch with a named column, or the tuple flag without columns, is refused', () => {
    const ts = (n: number) => Array.from({ length: n }, () => Number.NEGATIVE_INFINITY);
    const o = { columns: true, tuples: true };
    assert.ok(
      tuples(
        encodeRecordBatch(
          [
            [1, 2],
            [3, 4],
          ],
          ts(2),
          o,
        ),
      ),
      'pairs',
    );
    assert.ok(!tuples(encodeRecordBatch([[1, 2], [3]], ts(2), o)), 'differing lengths');
    assert.ok(!tuples(encodeRecordBatch([[], []], ts(2), o)), 'empty arrays');
    class Pair extends Array<number> {}
    assert.ok(!tuples(encodeRecordBatch([Pair.from([1, 2]), Pair.from([3, 4])], ts(2), o)), 'an Array subclass');
    assert.ok(!tuples(encodeRecordBatch([[1, 2], { 0: 1, 1: 2 }], ts(2), o)), 'an object among arrays');
    const named = Buffer.from(encodeRecordBatch([{ a: 1 }, { a: 2 }], ts(2), { columns: true }));
    named[4] = 2 | 8;
    assert.throws(() => decodeRecordBatch(named), /a tuple column has a name/);
    const bare = Buffer.from(encodeRecordBatch([[1, 2]], ts(1), o));
    bare[4] = 8;
    assert.throws(() => decodeRecordBatch(bare), FrameDecodeError);
  });

  test('a mutated tuple batch fails only with the typed error', () => {
    const row = fc.tuple(fc.integer(), fc.double(), fc.string(), fc.boolean());
    fc.assert(
      fc.property(
        fc.array(row, { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        fc.nat({ max: 3 }),
        (rows, at, byte, cut) => {
          const values = rows.map((r) => [...r]);
          const b = Buffer.from(
            encodeRecordBatch(
              values,
              values.map(() => 12),
              { columns: true, constants: true, tuples: true },
            ),
          );
          decodesOrRefuses(b, at, byte, cut);
        },
      ),
      { numRuns: 5_000 },
    );
  });

  test('golden vector: partials [key, count] with one timestamp, pinned byte for byte', async () => {
    const partials = [
      [1000, 3],
      [1001, 1],
      [-4, 12],
    ];
    const ts = [1_700_000_001_999, 1_700_000_001_999, 1_700_000_001_999];
    const url = new URL('../vectors/batches/columnar-tuples.hex', import.meta.url);
    const bytes = encodeRecordBatch(partials, ts, { columns: true, constants: true, tuples: true });
    if (process.env.UPDATE_VECTORS === '1') await writeFile(url, bytes.toString('hex') + '\n');
    const pinned = Buffer.from((await readFile(url, 'utf8')).trim(), 'hex');
    assert.equal(bytes.toString('hex'), pinned.toString('hex'), 'the batch encoding changed');
    assert.deepStrictEqual(decodeRecordBatch(pinned), { values: partials, timestamps: ts });
  });
});
