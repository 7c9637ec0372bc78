import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { datagenRow } from '../../src/index.js';
import type { DatagenOptions } from '../../src/connectors/index.js';
import { collect, sortBy } from '../helpers.js';

const options: DatagenOptions = {
  count: 5_000,
  seed: 11,
  fields: {
    id: { kind: 'sequence', start: 100 },
    n: { kind: 'int', min: -3, max: 3 },
    x: { kind: 'double', min: 1, max: 2 },
    s: { kind: 'string', length: 6 },
    b: { kind: 'boolean' },
    c: { kind: 'oneOf', values: ['r', 'g', 'b'] },
    ts: { kind: 'timestamp', startMs: 1_000, stepMs: 2, jitterMs: 5 },
  },
};

type Row = { id: number; n: number; x: number; s: string; b: boolean; c: string; ts: number };

describe('datagen', () => {
  test('the same seed gives the same rows at any parallelism', async () => {
    const one = sortBy(
      await collect<Row>((env) => env.fromSource('datagen', options).collect(), { parallelism: 1 }),
      (r) => r.id,
    );
    const three = sortBy(
      await collect<Row>((env) => env.fromSource('datagen', options).collect(), { parallelism: 3 }),
      (r) => r.id,
    );
    assert.equal(one.length, 5_000);
    assert.deepEqual(three, one);
    assert.deepEqual(one[17], datagenRow(options, 17));
  });

  test('a different seed gives different rows', () => {
    assert.notDeepEqual(datagenRow(options, 3), datagenRow({ ...options, seed: 12 }, 3));
  });

  test('fields stay inside their declared ranges', async () => {
    const rows = await collect<Row>((env) => env.fromSource('datagen', options).collect());
    for (const r of rows) {
      assert.ok(Number.isInteger(r.n) && r.n >= -3 && r.n <= 3);
      assert.ok(r.x >= 1 && r.x < 2);
      assert.match(r.s, /^[a-z0-9]{6}$/);
      assert.ok(['r', 'g', 'b'].includes(r.c));
      assert.equal(typeof r.b, 'boolean');
      const base = 1_000 + (r.id - 100) * 2;
      assert.ok(r.ts <= base && r.ts >= base - 5);
    }
    assert.deepEqual([...new Set(rows.map((r) => r.n))].sort(), [-1, -2, -3, 0, 1, 2, 3].sort());
  });

  test('rowsPerSecond limits the rate', async () => {
    const t0 = Date.now();
    const rows = await collect((env) => env.fromSource('datagen', { count: 30, rowsPerSecond: 200 }).collect());
    const elapsed = Date.now() - t0;
    assert.equal(rows.length, 30);
    // 30 rows at 200/s cannot finish in under ~145 ms (the first row is due at once)
    assert.ok(elapsed >= 140, `took ${elapsed} ms`);
  });

  test('bad options are refused with the option named', async () => {
    await assert.rejects(
      collect((env) => env.fromSource('datagen', { count: -1, fields: { a: { kind: 'int', min: 'x' } } }).collect()),
      (e: Error) =>
        e.message ===
        'operator \'_inline_source_0\': datagen: invalid options:\noption count: expected >= 0, got -1\noption fields.a.min: expected a number, got "x"',
    );
    await assert.rejects(
      collect((env) => env.fromSource('datagen', { rows: 3 }).collect()),
      /^ConnectorError: operator '_inline_source_0': datagen: invalid options: unknown key "rows"; known: count, rowsPerSecond, seed, fields$/,
    );
    // A misspelt key names the one it most likely means.
    await assert.rejects(
      collect((env) => env.fromSource('datagen', { rowsPerSec: 3 }).collect()),
      /unknown key "rowsPerSec" \(did you mean "rowsPerSecond"\?\)/,
    );
  });
});
