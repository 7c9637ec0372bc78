// Sources restored at another parallelism (SourceFactory.rescale): whatever each earlier subtask had
// read, the new subtasks together read exactly the rest, once. Property-checked over parallelisms and
// progress, with the connectors' own readers.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { datagen, file, sequence } from '../../src/connectors/index.js';
import type { Connector, SourceReader } from '../../src/sdk/index.js';

const ctx = (subtaskIndex: number, parallelism: number) => ({
  operatorName: 'src',
  subtaskIndex,
  parallelism,
  signal: new AbortController().signal,
});

/** Read up to `limit` records (in reads of at most 7, so positions fall mid-batch and mid-block). */
async function read<T>(reader: SourceReader<T>, limit = Infinity): Promise<T[]> {
  const out: T[] = [];
  const sink = {
    collect: (v: T) => void out.push(v),
    collectWithTimestamp: (v: T) => void out.push(v),
    emitWatermark() {},
    markIdle() {},
  };
  while (out.length < limit) if ((await reader.read(sink, Math.min(7, limit - out.length))) === 'END') break;
  return out;
}

/** Run `from` subtasks for `progress[i]` records each, rescale their positions to `to`, read the rest; return every record read. */
async function rescaled<T>(
  c: Connector<T>,
  options: unknown,
  from: number,
  to: number,
  progress: number[],
): Promise<T[]> {
  const src = c.source!;
  const o = src.validate!(options);
  const got: T[] = [];
  const positions: unknown[] = [];
  for (let i = 0; i < from; i++) {
    const r = await src.createReader(o, ctx(i, from));
    got.push(...(await read(r, progress[i]!)));
    positions.push(progress[i]! === 0 && i % 2 === 1 ? undefined : r.snapshot!());
    await r.close?.();
  }
  const divided = await src.rescale!(positions, to, o);
  assert.equal(divided.length, to);
  for (let s = 0; s < to; s++) {
    const r = await src.createReader(o, ctx(s, to));
    if (divided[s] !== undefined) await r.restore!(divided[s]);
    got.push(...(await read(r)));
    await r.close?.();
  }
  return got;
}

const numbers = (xs: unknown[], key: (x: never) => number): number[] => (xs as never[]).map(key).sort((a, b) => a - b);
const range = (n: number, start = 0): number[] => Array.from({ length: n }, (_, i) => start + i);

describe('sources restored at another parallelism read exactly what was left', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clink-rescale-src-'));
    for (let f = 0; f < 5; f++) await writeFile(join(dir, `in${f}.txt`), range(40, f * 40).join('\n') + '\n');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const plan = fc.record({
    from: fc.integer({ min: 1, max: 9 }),
    to: fc.integer({ min: 1, max: 9 }),
    progress: fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 9, maxLength: 9 }),
  });

  test('datagen (splits of the row space)', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async ({ from, to, progress }) => {
        const got = await rescaled(datagen, { count: 1_000, fields: { id: { kind: 'sequence' } } }, from, to, progress);
        assert.deepEqual(
          numbers(got, (r: { id: number }) => r.id),
          range(1_000),
        );
      }),
      { numRuns: 40 },
    );
  });

  test('datagen rescaled twice keeps every split where it was', async () => {
    const o = { count: 3_000, fields: { id: { kind: 'sequence' } } } as const;
    const src = datagen.source!;
    const v = src.validate!(o);
    const got: Record<string, unknown>[] = [];
    let positions: unknown[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await src.createReader(v, ctx(i, 2));
      got.push(...(await read(r, 300 + i * 200)));
      positions.push(r.snapshot!());
    }
    const three = await src.rescale!(positions, 3, v);
    positions = [];
    for (let s = 0; s < 3; s++) {
      const r = await src.createReader(v, ctx(s, 3));
      await r.restore!(three[s]);
      got.push(...(await read(r, 250)));
      positions.push(r.snapshot!());
    }
    for (const [s, p] of (await src.rescale!(positions, 1, v)).entries()) {
      const r = await src.createReader(v, ctx(s, 1));
      await r.restore!(p);
      got.push(...(await read(r)));
    }
    assert.deepEqual(
      numbers(got, (r: { id: number }) => r.id),
      range(3_000),
    );
  });

  test('sequence (ranges left, dealt out in equal pieces)', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async ({ from, to, progress }) => {
        const got = await rescaled(sequence, { from: 5, to: 1_204 }, from, to, progress);
        assert.deepEqual(
          numbers(got, (n: number) => n),
          range(1_200, 5),
        );
      }),
      { numRuns: 40 },
    );
  });

  test('file (files left and the line reached in each)', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async ({ from, to, progress }) => {
        const got = await rescaled(
          file,
          { path: dir, format: 'lines' },
          from,
          to,
          progress.map((p) => p % 90),
        );
        assert.deepEqual(
          numbers(got, (l: string) => Number(l)),
          range(200),
        );
      }),
      { numRuns: 25 },
    );
  });
});
