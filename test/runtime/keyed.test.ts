import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { JobEnvironment, KeyedCount } from '../../src/index.js';
import { collect, sortBy } from '../helpers.js';

describe('keyed streams', () => {
  test('reduce emits the running value per key for every record, as Flink does', async () => {
    const out = await collect<number>((env) => {
      env
        .fromElements([1, 2, 3, 4, 5])
        .keyBy((x) => x % 2)
        .reduce((a, b) => a + b)
        .collect();
    });
    assert.deepEqual(out, [1, 2, 4, 6, 9]);
  });

  test('sum() of values and sum(field) keep the first record’s other fields', async () => {
    const plain = await collect<number>((env) =>
      env
        .fromElements([1, 2, 3])
        .keyBy(() => 'k')
        .sum()
        .collect(),
    );
    assert.deepEqual(plain, [1, 3, 6]);
    const byField = await collect<{ k: string; n: number; tag: string }>((env) => {
      env
        .fromElements([
          { k: 'a', n: 1, tag: 'first' },
          { k: 'a', n: 2, tag: 'second' },
          { k: 'b', n: 5, tag: 'b' },
        ])
        .keyBy((r) => r.k)
        .sum('n')
        .collect();
    });
    assert.deepEqual(byField, [
      { k: 'a', n: 1, tag: 'first' },
      { k: 'a', n: 3, tag: 'first' },
      { k: 'b', n: 5, tag: 'b' },
    ]);
  });

  test('count() emits { key, count } per record', async () => {
    const out = await collect<KeyedCount<string>>((env) =>
      env
        .fromElements(['x', 'y', 'x'])
        .keyBy((w) => w)
        .count()
        .collect(),
    );
    assert.deepEqual(out, [
      { key: 'x', count: 1 },
      { key: 'y', count: 1 },
      { key: 'x', count: 2 },
    ]);
  });

  test('keyed state: value, map and list state are scoped to the current key', async () => {
    const out = await collect<string>((env) => {
      env
        .fromElements([
          ['a', 'red'],
          ['b', 'blue'],
          ['a', 'red'],
          ['a', 'green'],
        ] as [string, string][])
        .keyBy(([k]) => k)
        .process<string>({
          processElement([k, color], ctx, out) {
            const n = ctx.state.value<number>('n');
            n.update((n.value() ?? 0) + 1);
            const colors = ctx.state.map<string, number>('colors');
            colors.put(color, (colors.get(color) ?? 0) + 1);
            const seen = ctx.state.list<string>('seen');
            seen.add(color);
            out.collect(
              `${k} n=${n.value()} ${color}x${colors.get(color)} distinct=${colors.size()} seen=${seen.get().join('+')}`,
            );
          },
        })
        .collect();
    });
    assert.deepEqual(out, [
      'a n=1 redx1 distinct=1 seen=red',
      'b n=1 bluex1 distinct=1 seen=blue',
      'a n=2 redx2 distinct=1 seen=red+red',
      'a n=3 greenx1 distinct=2 seen=red+red+green',
    ]);
  });

  test('state clear() and update(undefined) remove the value', async () => {
    const out = await collect<string>((env) => {
      env
        .fromElements([1, 2, 3, 4])
        .keyBy(() => 'k')
        .process<string>({
          processElement(v, ctx, out) {
            const s = ctx.state.value<number>('last');
            out.collect(`${v}:${s.value() ?? '-'}`);
            if (v === 2) s.clear();
            else s.update(v);
            const l = ctx.state.list<number>('l');
            l.update(v === 3 ? [] : [v]);
            if (v === 4) out.collect(`list=${l.get().join(',')}`);
          },
        })
        .collect();
    });
    assert.deepEqual(out, ['1:-', '2:1', '3:-', '4:3', 'list=4']);
  });

  test('a state name used with two kinds is refused with a clear error', async () => {
    await assert.rejects(
      collect((env) => {
        env
          .fromElements([1])
          .keyBy(() => 1)
          .process({
            processElement(_v, ctx) {
              ctx.state.value('x');
              ctx.state.list('x');
            },
          })
          .collect();
      }),
      /state 'x' of operator '_inline_keyedProcess_0' is a value state, not a list state/,
    );
  });

  test('event-time timers fire per key in timestamp order when the watermark passes them', async () => {
    const out = await collect<string>((env) => {
      env
        .fromElements([
          { k: 'a', ts: 100 },
          { k: 'b', ts: 150 },
          { k: 'a', ts: 400 },
        ])
        .assignTimestamps((r) => r.ts)
        .keyBy((r) => r.k)
        .process<string>({
          processElement(r, ctx) {
            ctx.timers.registerEventTime(r.ts + 50);
            ctx.timers.registerEventTime(r.ts + 50); // one timer per key and time
            if (r.ts === 400) ctx.timers.deleteEventTime(450);
          },
          onTimer(ts, ctx, out) {
            out.collect(`${ctx.key}@${ts} domain=${ctx.timeDomain} t=${ctx.timestamp}`);
          },
        })
        .collect();
    });
    assert.deepEqual(out, ['a@150 domain=event t=150', 'b@200 domain=event t=200']);
  });

  test('processing-time timers fire on the wall clock', async () => {
    const out = await collect<string>((env) => {
      env
        .fromSource('datagen', { count: 3, rowsPerSecond: 20 })
        .keyBy(() => 'k')
        .process<string>({
          processElement(r: { id: number }, ctx, out) {
            if (r.id === 0) ctx.timers.registerProcessingTime(ctx.timers.currentProcessingTime() + 20);
            out.collect(`rec${r.id}`);
          },
          onTimer(_ts, ctx, out) {
            out.collect(`timer ${ctx.timeDomain}`);
          },
        })
        .collect();
    });
    // three rows at 20/s take ~100 ms, so the 20 ms timer fires between them
    assert.deepEqual(out[0], 'rec0');
    assert.ok(out.includes('timer processing'), JSON.stringify(out));
    assert.equal(out.length, 4);
  });

  test('keyed co-process shares keyed state between both inputs', async () => {
    const out = await collect<string>(
      (env) => {
        const orders = env.fromElements([
          { user: 'u1', item: 'book' },
          { user: 'u2', item: 'pen' },
        ]);
        const users = env.fromElements([{ id: 'u1', name: 'Ada' }]);
        orders
          .connect(users)
          .keyBy(
            (o) => o.user,
            (u) => u.id,
          )
          .process<string>({
            processElement1(o, ctx) {
              ctx.state.list<string>('items').add(o.item);
              ctx.timers.registerEventTime(Number.MAX_SAFE_INTEGER);
            },
            processElement2(u, ctx) {
              ctx.state.value<string>('name').update(u.name);
            },
            onTimer(_t, ctx, out) {
              out.collect(
                `${ctx.state.value<string>('name').value() ?? ctx.key}: ${ctx.state.list<string>('items').get().join(',')}`,
              );
            },
          })
          .collect();
      },
      { parallelism: 2 },
    );
    assert.deepEqual(sortBy(out), ['Ada: book', 'u2: pen']);
  });

  test('composite keys group by value', async () => {
    const out = await collect<{ key: [string, number]; count: number }>((env) => {
      env
        .fromElements([
          ['a', 1],
          ['a', 1],
          ['a', 2],
        ] as [string, number][])
        .keyBy((r) => [r[0], r[1]])
        .count()
        .collect();
    });
    assert.deepEqual(
      out.map((r) => r.count),
      [1, 2, 1],
    );
  });
});

describe('keyed aggregations and partitioned transforms', () => {
  const rows = [
    { k: 'a', n: 3, tag: 'first' },
    { k: 'a', n: 1, tag: 'second' },
    { k: 'a', n: 5, tag: 'third' },
    { k: 'a', n: 1, tag: 'fourth' },
  ];

  test('min/max keep the first record’s other fields; minBy/maxBy emit the extreme record', async () => {
    const run = (op: 'min' | 'max' | 'minBy' | 'maxBy') =>
      collect<{ n: number; tag: string }>((env) =>
        env
          .fromElements(rows)
          .keyBy((r) => r.k)
          [op]('n')
          .collect(),
      );
    assert.deepEqual(
      (await run('min')).map((r) => `${r.n}/${r.tag}`),
      ['3/first', '1/first', '1/first', '1/first'],
    );
    assert.deepEqual(
      (await run('max')).map((r) => `${r.n}/${r.tag}`),
      ['3/first', '3/first', '5/first', '5/first'],
    );
    assert.deepEqual(
      (await run('minBy')).map((r) => `${r.n}/${r.tag}`),
      ['3/first', '1/second', '1/second', '1/second'],
    );
    assert.deepEqual(
      (await run('maxBy')).map((r) => `${r.n}/${r.tag}`),
      ['3/first', '3/first', '5/third', '5/third'],
    );
    const plain = await collect<number>((env) =>
      env
        .fromElements([4, 2, 9])
        .keyBy(() => 0)
        .max()
        .collect(),
    );
    assert.deepEqual(plain, [4, 4, 9]);
  });

  test('keyBy().map/filter/flatMap run on the subtask that owns the key', async () => {
    const out = await collect<string>(
      (env) => {
        env
          .fromSequence(1, 600)
          .keyBy((x) => x % 6)
          .filter((x) => x % 2 === 0)
          .keyBy((x) => x % 6)
          .flatMap<number>((x) => [x])
          .keyBy((x) => x % 6)
          .map((x) => x % 6)
          .process<string>({ processElement: (k, ctx, o) => o.collect(`${k}@${ctx.subtaskIndex}`) })
          .collect();
      },
      { parallelism: 3 },
    );
    assert.equal(out.length, 300);
    // every key is seen on exactly one subtask
    const owners = new Map<string, Set<string>>();
    for (const s of out) {
      const [k, sub] = s.split('@') as [string, string];
      (owners.get(k) ?? owners.set(k, new Set()).get(k)!).add(sub);
    }
    assert.deepEqual([...owners.keys()].sort(), ['0', '2', '4']);
    for (const subs of owners.values()) assert.equal(subs.size, 1);
  });

  test('chaining settings do not change results', async () => {
    const build = (split: boolean) => (env: JobEnvironment) => {
      let s = env.fromSequence(1, 3_000).map((x) => x * 3);
      if (split) s = s.startNewChain();
      let f = s.filter((x) => x % 2 === 1);
      if (split) f = f.disableChaining();
      f.map((x) => ({ key: x % 10, total: x }))
        .keyBy((r) => r.key)
        .sum('total')
        .collect();
    };
    // A key's records come from both source subtasks: the running totals in between depend on how
    // their channels interleave, which no setting fixes; each key's updates and its total do not.
    const outcome = (rows: { key: number; total: number }[]) => {
      const byKey = new Map<number, { updates: number; total: number }>();
      for (const r of rows) {
        const k = byKey.get(r.key) ?? { updates: 0, total: 0 };
        byKey.set(r.key, { updates: k.updates + 1, total: Math.max(k.total, r.total) });
      }
      return [...byKey].sort((a, b) => a[0] - b[0]);
    };
    const split = outcome(await collect(build(true), { parallelism: 2 }));
    assert.deepEqual(split, outcome(await collect(build(false), { parallelism: 2 })));
    assert.deepEqual(
      split.map(([key]) => key),
      [1, 3, 5, 7, 9],
    );
  });
});

describe('state TTL in a job', () => {
  test('a value read after its TTL reads as absent, and the task counts what expired', async () => {
    const { defineJob, runJob } = await import('../../src/index.js');
    const records = 40;
    const keys = 4;
    const job = defineJob({ name: 'ttl', version: '1' }, (env) => {
      env
        .fromSequence(0, records - 1)
        .keyBy((x) => x % keys)
        .process<boolean>({
          processElement(_x, ctx, out) {
            // The clock moves 2 ms between records: every value is 1 ms past its TTL when it is read.
            const from = Date.now();
            while (Date.now() < from + 2);
            const last = ctx.state.value<number>('last', { ttl: { ttlMs: 1 } });
            out.collect(last.value() !== undefined);
            last.update(1);
          },
        })
        .setParallelism(1)
        .collect('seen');
    });
    const result = await runJob(job, { parallelism: 1 });
    assert.deepEqual(result.collected.seen, new Array(records).fill(false));
    const expired = result.tasks.reduce((n, t) => n + t.stateExpired, 0);
    assert.ok(expired >= records - keys && expired <= records, `${expired} values expired`);
  });
});
