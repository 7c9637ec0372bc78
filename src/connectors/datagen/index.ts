/**
 * datagen: deterministic synthetic rows. Row i's fields are a pure function of (seed, i), so the same
 * seed gives the same rows at any parallelism. Row i is in split i mod 128 and a subtask owns a range of
 * splits (connectors/index-space.ts), so a restore at another parallelism divides the rows left exactly.
 */
import { z } from 'zod';
import type { Connector, SourceOutput } from '../../sdk/index.js';
import { IndexSpaceCursor, rescaleIndexSpace } from '../index-space.js';
import { parseOptions, RatePacer } from '../options.js';

const Field = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('sequence'), start: z.number().int().default(0) }).strict(),
  z
    .object({ kind: z.literal('int'), min: z.number().int().default(0), max: z.number().int().default(1_000_000) })
    .strict(),
  z.object({ kind: z.literal('double'), min: z.number().default(0), max: z.number().default(1) }).strict(),
  z.object({ kind: z.literal('string'), length: z.number().int().min(1).max(1024).default(8) }).strict(),
  z.object({ kind: z.literal('boolean') }).strict(),
  z.object({ kind: z.literal('oneOf'), values: z.array(z.unknown()).min(1) }).strict(),
  z
    .object({
      kind: z.literal('timestamp'),
      startMs: z.number().int().default(0),
      stepMs: z.number().min(0).default(1),
      /** Subtract up to this many ms at random, to make timestamps out of order. */
      jitterMs: z.number().int().min(0).default(0),
    })
    .strict(),
]);
export type DatagenField = z.input<typeof Field>;

export const DatagenOptions = z
  .object({
    count: z.number().int().min(0).optional(),
    rowsPerSecond: z.number().positive().optional(),
    seed: z.number().int().default(0),
    fields: z.record(z.string(), Field).default({ id: { kind: 'sequence', start: 0 } }),
  })
  .strict();
export type DatagenOptions = z.input<typeof DatagenOptions>;

/** A 32-bit hash of (seed, row, draw): splitmix-style mixing, identical in every process. */
function rand32(seed: number, row: number, draw: number): number {
  let h =
    (seed ^
      Math.imul(row | 0, 0x9e3779b1) ^
      Math.imul((row / 4294967296) | 0, 0x85ebca77) ^
      Math.imul(draw + 1, 0xc2b2ae3d)) |
    0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

type RowFn = (row: number) => Record<string, unknown>;

function compile(seed: number, fields: Record<string, z.infer<typeof Field>>): RowFn {
  const gens = Object.entries(fields).map(([name, f], fi): [string, (row: number) => unknown] => {
    const d = fi * 64;
    switch (f.kind) {
      case 'sequence':
        return [name, (row) => f.start + row];
      case 'int': {
        const span = f.max - f.min + 1;
        return [name, (row) => f.min + Math.floor((rand32(seed, row, d) / 4294967296) * span)];
      }
      case 'double':
        return [name, (row) => f.min + (rand32(seed, row, d) / 4294967296) * (f.max - f.min)];
      case 'string':
        return [
          name,
          (row) => {
            let s = '';
            for (let i = 0; i < f.length; i++) s += ALPHABET[rand32(seed, row, d + i) % ALPHABET.length];
            return s;
          },
        ];
      case 'boolean':
        return [name, (row) => (rand32(seed, row, d) & 1) === 1];
      case 'oneOf':
        return [name, (row) => f.values[rand32(seed, row, d) % f.values.length]];
      case 'timestamp':
        return [
          name,
          (row) =>
            f.startMs + Math.floor(row * f.stepMs) - (f.jitterMs > 0 ? rand32(seed, row, d) % (f.jitterMs + 1) : 0),
        ];
    }
  });
  return (row) => {
    const r: Record<string, unknown> = {};
    for (const [name, g] of gens) r[name] = g(row);
    return r;
  };
}

/** Row `i` of a datagen source with these options (for tests and reference answers). */
export function datagenRow(options: DatagenOptions, i: number): Record<string, unknown> {
  const o = DatagenOptions.parse(options);
  return compile(o.seed, o.fields)(i);
}

export const datagen: Connector<Record<string, unknown>> = {
  name: 'datagen',
  source: {
    validate: (o) => parseOptions('datagen', DatagenOptions, o),
    createReader(o: z.infer<typeof DatagenOptions>, ctx) {
      const rowOf = compile(o.seed, o.fields);
      const count = o.count ?? Number.POSITIVE_INFINITY;
      const cursor = new IndexSpaceCursor(ctx.subtaskIndex, ctx.parallelism);
      const pacer = new RatePacer(
        o.rowsPerSecond === undefined ? undefined : o.rowsPerSecond * cursor.share,
        ctx.signal,
      );
      const emit =
        (out: SourceOutput<Record<string, unknown>>): ((row: number) => void) =>
        (row) =>
          out.collect(rowOf(row));
      return {
        async read(out: SourceOutput<Record<string, unknown>>, max: number) {
          const n = await pacer.allowance(max);
          pacer.emitted(cursor.advance(n, count, emit(out)));
          return cursor.done(count) ? 'END' : 'MORE';
        },
        snapshot: () => cursor.snapshot(),
        restore(position) {
          cursor.restore(position, `datagen source '${ctx.operatorName}'`);
        },
      };
    },
    rescale: (positions, parallelism) => rescaleIndexSpace(positions, parallelism),
  },
};
