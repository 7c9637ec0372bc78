import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Collector, ProcessContext, ProcessFunction } from '../../src/index.js';
import { collect, sortBy } from '../helpers.js';

const num = (a: number, b: number): number => a - b;

describe('stateless transforms', () => {
  test('fromElements keeps order; map and filter apply per record', async () => {
    const out = await collect<number>((env) => {
      env
        .fromElements([1, 2, 3, 4, 5, 6])
        .map((x) => x * 10)
        .filter((x) => x % 20 === 0)
        .collect();
    });
    assert.deepEqual(out, [20, 40, 60]);
  });

  test('flatMap emits through the collector or by returning an iterable', async () => {
    const out = await collect<string>((env) => {
      env
        .fromElements(['a b', 'c'])
        .flatMap<string>((line, out) => line.split(' ').forEach((w) => out.collect(w)))
        .flatMap<string>((w) => [w, w.toUpperCase()])
        .collect();
    });
    assert.deepEqual(out, ['a', 'A', 'b', 'B', 'c', 'C']);
  });

  test('fromSequence is inclusive and splits across subtasks without loss or duplication', async () => {
    for (const p of [1, 3, 7]) {
      const out = await collect<number>((env) => env.fromSequence(5, 1_004).collect(), { parallelism: p });
      assert.equal(out.length, 1_000);
      assert.deepEqual(
        [...out].sort(num),
        Array.from({ length: 1_000 }, (_, i) => i + 5),
      );
    }
  });

  test('union merges streams of one type', async () => {
    const out = await collect<number>(
      (env) => {
        const a = env.fromElements([1, 2]);
        const b = env.fromElements([3]);
        const c = env.fromSequence(4, 5);
        a.union(b, c).collect();
      },
      { parallelism: 2 },
    );
    assert.deepEqual([...out].sort(num), [1, 2, 3, 4, 5]);
  });

  test('rebalance spreads records round-robin over subtasks', async () => {
    const out = await collect<number>((env) => {
      env
        .fromSequence(1, 400)
        .setParallelism(1)
        .rebalance()
        .process<number>({
          processElement(_v: number, ctx: ProcessContext, o: Collector<number>) {
            o.collect(ctx.subtaskIndex);
          },
        })
        .setParallelism(4)
        .collect();
    });
    const per = [0, 1, 2, 3].map((i) => out.filter((x) => x === i).length);
    assert.deepEqual(per, [100, 100, 100, 100]);
  });

  test('broadcast sends every record to every subtask', async () => {
    const out = await collect<string>((env) => {
      env
        .fromElements(['x', 'y'])
        .broadcast()
        .process<string>({
          processElement(v: string, ctx, o) {
            o.collect(`${v}@${ctx.subtaskIndex}`);
          },
        })
        .setParallelism(3)
        .collect();
    });
    assert.deepEqual(out.sort(), ['x@0', 'x@1', 'x@2', 'y@0', 'y@1', 'y@2']);
  });

  test('env.params and env.setParallelism reach the job', async () => {
    const out = await collect<string>(
      (env) => {
        env.setParallelism(3);
        const suffix = env.params.suffix ?? '?';
        env
          .fromSequence(1, 30)
          .process<string>({
            processElement(v: number, ctx, o) {
              if (v === 1) o.collect(`p=${ctx.subtaskIndex}`);
              o.collect(`${v}${suffix}`);
            },
          })
          .collect();
      },
      { params: { suffix: '!' } },
    );
    assert.ok(out.includes('30!'));
    assert.equal(out.length, 31);
  });

  test('process functions see timestamps, watermarks and open()', async () => {
    const out = await collect<string>((env) => {
      env
        .fromElements([{ ts: 10 }, { ts: 20 }])
        .assignTimestamps((r) => r.ts)
        .process<string>({
          prefix: '',
          open(ctx) {
            this.prefix = `${ctx.operatorName}:${ctx.parallelism}`;
          },
          processElement(_r, ctx, o) {
            o.collect(`${this.prefix} ts=${ctx.timestamp} wm=${ctx.currentWatermark()}`);
          },
        } as ProcessFunction<{ ts: number }, string> & { prefix: string })
        .name('stamp')
        .collect();
    });
    // watermarks are emitted after each batch, so within one batch the watermark has not moved yet
    assert.deepEqual(out, ['stamp:1 ts=10 wm=-Infinity', 'stamp:1 ts=20 wm=-Infinity']);
  });

  test('connect().process() sees both inputs apart', async () => {
    const out = await collect<string>((env) => {
      const nums = env.fromElements([1, 2]);
      const words = env.fromElements(['a']);
      nums
        .connect(words)
        .process<string>({
          processElement1: (n, _c, o) => o.collect(`n${n}`),
          processElement2: (w, _c, o) => o.collect(`w${w}`),
        })
        .collect();
    });
    assert.deepEqual(out.sort(), ['n1', 'n2', 'wa']);
  });

  test('print() writes one line per record, prefixed with the subtask when parallel', async () => {
    let text = '';
    await collect(
      (env) => {
        env.fromElements([{ a: 1 }, 'plain']).print();
        env.fromSequence(1, 2).print('seq ').setParallelism(2);
      },
      {
        stdout: (t) => {
          text += t;
        },
      },
    );
    const lines = text.trim().split('\n').sort();
    assert.deepEqual(lines, ['plain', 'seq 1> 1', 'seq 2> 2', '{"a":1}'].sort());
  });

  test('several collect sinks are kept apart by name', async () => {
    const { runJob, defineJob } = await import('../../src/index.js');
    const r = await runJob(
      defineJob({ name: 'two', version: '1' }, (env) => {
        const s = env.fromElements([1, 2, 3]);
        s.filter((x) => x > 1).collect('big');
        s.filter((x) => x === 1).collect('small');
      }),
    );
    assert.deepEqual(sortBy(r.collected.big!), [2, 3]);
    assert.deepEqual(r.collected.small, [1]);
  });
});
