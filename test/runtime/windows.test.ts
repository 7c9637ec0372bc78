import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  buildJob,
  defineJob,
  Windows,
  type JobEnvironment,
  type TimeWindow,
  type WindowCount,
} from '../../src/index.js';
import { collect, sortBy } from '../helpers.js';

interface Ev {
  k: string;
  v: number;
  ts: number;
}

const ev = (k: string, v: number, ts: number): Ev => ({ k, v, ts });

const sumAgg = {
  create: () => 0,
  add: (e: Ev, acc: number) => acc + e.v,
  result: (acc: number, key: string, w: TimeWindow) => ({ key, start: w.start, end: w.end, sum: acc }),
  merge: (a: number, b: number) => a + b,
};

describe('windows', () => {
  test('tumbling event-time windows accept out-of-order records within the bound', async () => {
    const input = [
      ev('a', 1, 1_000),
      ev('a', 2, 12_000),
      ev('a', 4, 9_000),
      ev('b', 8, 5_000),
      ev('a', 16, 19_999),
      ev('a', 32, 20_000),
    ];
    const out = await collect((env) => {
      env
        .fromElements(input)
        .assignTimestamps((e) => e.ts, { maxOutOfOrdernessMs: 5_000 })
        .keyBy((e) => e.k)
        .window(Windows.tumbling(10_000))
        .aggregate(sumAgg)
        .collect();
    });
    assert.deepEqual(
      sortBy(out),
      sortBy([
        { key: 'a', start: 0, end: 10_000, sum: 5 },
        { key: 'b', start: 0, end: 10_000, sum: 8 },
        { key: 'a', start: 10_000, end: 20_000, sum: 18 },
        { key: 'a', start: 20_000, end: 30_000, sum: 32 },
      ]),
    );
  });

  test('records behind the watermark are dropped once their window has fired', async () => {
    // One record per batch, so the watermark advances between records.
    const out = await collect(
      (env) => {
        env
          .fromElements([ev('a', 1, 1_000), ev('a', 2, 25_000), ev('a', 100, 3_000), ev('a', 4, 26_000)])
          .assignTimestamps((e) => e.ts)
          .keyBy((e) => e.k)
          .window(Windows.tumbling(10_000))
          .aggregate(sumAgg)
          .collect();
      },
      { batchSize: 1 },
    );
    assert.deepEqual(
      sortBy(out),
      sortBy([
        { key: 'a', start: 0, end: 10_000, sum: 1 },
        { key: 'a', start: 20_000, end: 30_000, sum: 6 },
      ]),
    );
  });

  test('allowed lateness: a late record within it re-fires its window for its key, with the updated result; later ones are dropped', async () => {
    // One record per batch, so the watermark advances between records (no out-of-orderness bound).
    const out = await collect(
      (env) => {
        env
          .fromElements([
            ev('a', 1, 1_000),
            ev('b', 1, 2_000),
            ev('a', 2, 12_000),
            ev('a', 4, 3_000),
            ev('a', 8, 16_000),
            ev('a', 16, 5_000),
            ev('a', 32, 31_000),
          ])
          .assignTimestamps((e) => e.ts)
          .keyBy((e) => e.k)
          .window(Windows.tumbling(10_000), { allowedLatenessMs: 5_000 })
          .aggregate(sumAgg)
          .collect();
      },
      { batchSize: 1 },
    );
    // Watermark 11,999 passes [0, 10,000): it fires for a and b (in key-group order).
    assert.deepEqual(
      sortBy(out.slice(0, 2)),
      sortBy([
        { key: 'a', start: 0, end: 10_000, sum: 1 },
        { key: 'b', start: 0, end: 10_000, sum: 1 },
      ]),
    );
    assert.deepEqual(out.slice(2), [
      // 3,000 arrives at watermark 11,999, within the 5,000 ms allowed: a's window fires again, updated; b's does not.
      { key: 'a', start: 0, end: 10_000, sum: 5 },
      // At watermark 15,999 the window is gone: 5,000 is dropped. Then the rest fires in order.
      { key: 'a', start: 10_000, end: 20_000, sum: 10 },
      { key: 'a', start: 30_000, end: 40_000, sum: 32 },
    ]);
  });

  test('allowed lateness on sessions: a late record merges into a fired session, which fires again at once; past the lateness it is dropped', async () => {
    const out = await collect(
      (env) => {
        env
          .fromElements([
            ev('a', 1, 1_000),
            ev('a', 2, 5_000),
            ev('a', 4, 1_500),
            ev('a', 8, 9_000),
            ev('a', 16, 2_000),
          ])
          .assignTimestamps((e) => e.ts)
          .keyBy((e) => e.k)
          .window(Windows.session(1_000), { allowedLatenessMs: 5_000 })
          .aggregate(sumAgg)
          .collect();
      },
      { batchSize: 1 },
    );
    assert.deepEqual(out, [
      // Watermark 4,999 fires [1,000, 2,000); 1,500 then merges into it: [1,000, 2,500) is due, so it fires at once.
      { key: 'a', start: 1_000, end: 2_000, sum: 1 },
      { key: 'a', start: 1_000, end: 2_500, sum: 5 },
      // Watermark 8,999 fires [5,000, 6,000) and cleans [1,000, 2,500) up (2,499 + 5,000 <= 8,999): 2,000 is dropped.
      { key: 'a', start: 5_000, end: 6_000, sum: 2 },
      { key: 'a', start: 9_000, end: 10_000, sum: 8 },
    ]);
  });

  test('sideOutputLateData: the records a window drops go to lateData(), as they came', async () => {
    const out = await collect(
      (env) => {
        const sums = env
          .fromElements([
            ev('a', 1, 1_000),
            ev('a', 2, 25_000),
            ev('a', 100, 3_000),
            ev('b', 7, 24_000),
            ev('a', 4, 26_000),
          ])
          // One assigner, so one watermark sees every record in order (the windows run at 2).
          .assignTimestamps((e) => e.ts)
          .setParallelism(1)
          .keyBy((e) => e.k)
          .window(Windows.tumbling(10_000))
          .sideOutputLateData()
          .aggregate(sumAgg);
        sums.collect('sums');
        sums
          .lateData()
          .map((e) => ({ late: e }))
          .collect('late');
      },
      { batchSize: 1, parallelism: 2 },
      'late',
    );
    assert.deepEqual(out, [{ late: ev('a', 100, 3_000) }]);
  });

  test('lateness is refused where it cannot apply, and lateData() without sideOutputLateData() says what to call', () => {
    const keyed = (env: JobEnvironment) => env.fromElements([ev('a', 1, 1)]).keyBy((e) => e.k);
    const build = (f: (env: JobEnvironment) => void) => () => buildJob(defineJob({ name: 'x', version: '1' }, f));
    assert.throws(
      build((env) => void keyed(env).window(Windows.tumbling(10), { time: 'processing', allowedLatenessMs: 5 })),
      /allowedLatenessMs applies to event-time windows/,
    );
    assert.throws(
      build((env) => void keyed(env).window(Windows.tumbling(10), { allowedLatenessMs: -1 })),
      /allowedLatenessMs must be a whole number of ms >= 0, got -1/,
    );
    assert.throws(
      build((env) => void keyed(env).window(Windows.tumbling(10)).count().lateData()),
      /lateData\(\): call sideOutputLateData\(\) on the windowed stream first/,
    );
  });

  test('window results carry the window’s last millisecond as their timestamp', async () => {
    const out = await collect<string>((env) => {
      env
        .fromElements([ev('a', 1, 5)])
        .assignTimestamps((e) => e.ts)
        .keyBy((e) => e.k)
        .window(Windows.tumbling(100))
        .count()
        .process<string>({ processElement: (c, ctx, o) => o.collect(`${c.count}@${ctx.timestamp}`) })
        .collect();
    });
    assert.deepEqual(out, ['1@99']);
  });

  test('sliding windows put each record in size/slide windows', async () => {
    const out = await collect<WindowCount<string>>((env) => {
      env
        .fromElements([ev('a', 1, 0), ev('a', 1, 5), ev('a', 1, 12)])
        .assignTimestamps((e) => e.ts)
        .keyBy((e) => e.k)
        .window(Windows.sliding(10, 5))
        .count()
        .collect();
    });
    assert.deepEqual(
      sortBy(out, (r) => r.start).map((r) => [r.start, r.end, r.count]),
      [
        [-5, 5, 1],
        [0, 10, 2],
        [5, 15, 2],
        [10, 20, 1],
      ],
    );
  });

  test('session windows merge when a record bridges two sessions', async () => {
    const out = await collect(
      (env) => {
        env
          .fromElements([ev('a', 1, 0), ev('a', 2, 30), ev('a', 4, 15), ev('b', 8, 0), ev('a', 16, 100)])
          .assignTimestamps((e) => e.ts, { maxOutOfOrdernessMs: 1_000 })
          .keyBy((e) => e.k)
          .window(Windows.session(10))
          .aggregate(sumAgg)
          .collect();
      },
      { batchSize: 1 },
    );
    // a@15 opens [15,25), which touches neither [0,10) nor [30,40): three sessions for a
    assert.deepEqual(
      sortBy(out),
      sortBy([
        { key: 'a', start: 0, end: 10, sum: 1 },
        { key: 'a', start: 15, end: 25, sum: 4 },
        { key: 'a', start: 30, end: 40, sum: 2 },
        { key: 'b', start: 0, end: 10, sum: 8 },
        { key: 'a', start: 100, end: 110, sum: 16 },
      ]),
    );
    const merged = await collect((env) => {
      env
        .fromElements([ev('a', 1, 0), ev('a', 2, 16), ev('a', 4, 8)])
        .assignTimestamps((e) => e.ts, { maxOutOfOrdernessMs: 1_000 })
        .keyBy((e) => e.k)
        .window(Windows.session(10))
        .aggregate(sumAgg)
        .collect();
    });
    // [0,10) and [16,26) are bridged by [8,18): one session [0,26)
    assert.deepEqual(merged, [{ key: 'a', start: 0, end: 26, sum: 7 }]);
  });

  test('window reduce, count and process functions', async () => {
    const input = [ev('a', 3, 1), ev('a', 5, 2), ev('b', 7, 3)];
    const reduced = await collect<Ev>((env) => {
      env
        .fromElements(input)
        .assignTimestamps((e) => e.ts)
        .keyBy((e) => e.k)
        .window(Windows.tumbling(10))
        .reduce((x, y) => ({ ...x, v: x.v + y.v }))
        .collect();
    });
    assert.deepEqual(sortBy(reduced.map((r) => [r.k, r.v])), [
      ['a', 8],
      ['b', 7],
    ]);
    const counted = await collect<WindowCount<string>>((env) => {
      env
        .fromElements(input)
        .assignTimestamps((e) => e.ts)
        .keyBy((e) => e.k)
        .window(Windows.tumbling(10))
        .count()
        .collect();
    });
    assert.deepEqual(
      sortBy(counted),
      sortBy([
        { key: 'a', start: 0, end: 10, count: 2 },
        { key: 'b', start: 0, end: 10, count: 1 },
      ]),
    );
    const processed = await collect<string>((env) => {
      env
        .fromElements(input)
        .assignTimestamps((e) => e.ts)
        .keyBy((e) => e.k)
        .window(Windows.tumbling(10))
        .process<string>({
          process: (key, w, els, out) => out.collect(`${key}[${w.start},${w.end}):${els.map((e) => e.v).join('+')}`),
        })
        .collect();
    });
    assert.deepEqual(processed.sort(), ['a[0,10):3+5', 'b[0,10):7']);
  });

  test('an event-time window on records without timestamps fails with a fix', async () => {
    await assert.rejects(
      collect((env) =>
        env
          .fromElements([1])
          .keyBy((x) => x)
          .window(Windows.tumbling(10))
          .count()
          .name('w')
          .collect(),
      ),
      /operator 'w' .* an event-time window got a record with no timestamp: call assignTimestamps/,
    );
  });

  test('processing-time windows fire on the clock and at end of input', async () => {
    const out = await collect<WindowCount<number>>((env) => {
      env
        .fromSource('datagen', { count: 6, rowsPerSecond: 60 })
        .keyBy(() => 1)
        .window(Windows.tumbling(40), { time: 'processing' })
        .count()
        .collect();
    });
    assert.equal(
      out.reduce((n, r) => n + r.count, 0),
      6,
    );
    assert.ok(out.length >= 2, `6 rows over ~100 ms should span several 40 ms windows, got ${out.length}`);
    for (const r of out) assert.equal(r.end - r.start, 40);
  });

  test('session windows with a process function see all merged elements', async () => {
    const out = await collect<string>((env) => {
      env
        .fromElements([ev('a', 1, 0), ev('a', 2, 5), ev('a', 3, 9)])
        .assignTimestamps((e) => e.ts)
        .keyBy((e) => e.k)
        .window(Windows.session(6))
        .process<string>({
          process: (_k, w, els, out) =>
            out.collect(
              `${w.start}-${w.end}:${els
                .map((e) => e.v)
                .sort()
                .join('')}`,
            ),
        })
        .collect();
    });
    assert.deepEqual(out, ['0-15:123']);
  });

  test('a 100,000-record keyed window job gives exactly the expected per-window sums', async () => {
    const N = 100_000;
    const keys = 17;
    const size = 1_000;
    // records arrive out of order by up to 50 ms; values are distinct so a lost or doubled record shows
    const tsOf = (i: number): number => i + ((i * 7919) % 50);
    const expected = new Map<string, number>();
    for (let i = 0; i < N; i++) {
      const id = `${i % keys}|${Math.floor(tsOf(i) / size) * size}`;
      expected.set(id, (expected.get(id) ?? 0) + i);
    }
    for (const p of [1, 4]) {
      const out = await collect<{ key: number; start: number; sum: number }>(
        (env) => {
          env
            .fromSequence(0, N - 1)
            .map((i) => ({ k: i % keys, v: i, ts: tsOf(i) }))
            .assignTimestamps((r) => r.ts, { maxOutOfOrdernessMs: 50 })
            .keyBy((r) => r.k)
            .window(Windows.tumbling(size))
            .aggregate({
              create: () => 0,
              add: (r, acc: number) => acc + r.v,
              result: (acc, key, w) => ({ key, start: w.start, sum: acc }),
            })
            .collect();
        },
        { parallelism: p },
      );
      const got = new Map(out.map((r) => [`${r.key}|${r.start}`, r.sum]));
      assert.equal(out.length, expected.size, `p=${p}: one result per key and window`);
      assert.deepEqual(got, expected, `p=${p}`);
    }
  });
});

describe('joins', () => {
  test('window join pairs records of the same key and window', async () => {
    const out = await collect<string>(
      (env) => {
        const clicks = env
          .fromElements([
            { user: 'u1', page: 'home', ts: 1 },
            { user: 'u1', page: 'cart', ts: 12 },
            { user: 'u2', page: 'home', ts: 3 },
          ])
          .assignTimestamps((c) => c.ts);
        const buys = env
          .fromElements([
            { uid: 'u1', item: 'pen', ts: 5 },
            { uid: 'u2', item: 'ink', ts: 15 },
          ])
          .assignTimestamps((b) => b.ts);
        clicks
          .join(buys)
          .where((c) => c.user)
          .equalTo((b) => b.uid)
          .window(Windows.tumbling(10))
          .apply((c, b, w) => `${c.user}:${c.page}+${b.item}@${w.start}`)
          .collect();
      },
      { parallelism: 2 },
    );
    assert.deepEqual(out, ['u1:home+pen@0']);
  });

  test('interval join matches right records within [lower, upper] of each left record', async () => {
    const out = await collect<string>(
      (env) => {
        const orders = env
          .fromElements([
            { id: 'o1', ts: 100 },
            { id: 'o2', ts: 500 },
          ])
          .assignTimestamps((o) => o.ts);
        const ships = env
          .fromElements([
            { order: 'o1', ts: 90 },
            { order: 'o1', ts: 150 },
            { order: 'o1', ts: 400 },
            { order: 'o2', ts: 510 },
          ])
          .assignTimestamps((s) => s.ts);
        orders
          .keyBy((o) => o.id)
          .intervalJoin(ships.keyBy((s) => s.order))
          .between(0, 100)
          .process<string>({
            processElement: (o, s, ctx, out) => out.collect(`${ctx.key}:${o.ts}->${s.ts}`),
          })
          .collect();
      },
      { parallelism: 2 },
    );
    assert.deepEqual(out.sort(), ['o1:100->150', 'o2:500->510']);
  });

  test('interval join apply() maps each pair', async () => {
    const out = await collect<number>((env) => {
      const a = env
        .fromElements([{ k: 1, ts: 10 }])
        .assignTimestamps((x) => x.ts)
        .keyBy((x) => x.k);
      const b = env
        .fromElements([
          { k: 1, ts: 5 },
          { k: 1, ts: 20 },
        ])
        .assignTimestamps((x) => x.ts)
        .keyBy((x) => x.k);
      a.intervalJoin(b)
        .between(-5, 5)
        .apply((l, r) => r.ts - l.ts)
        .collect();
    });
    assert.deepEqual(out, [-5]);
  });
});

describe('windowAll', () => {
  test('windows over the whole stream run on one subtask whatever the parallelism', async () => {
    const out = await collect<WindowCount<undefined>>(
      (env) => {
        env
          .fromSequence(0, 999)
          .map((i) => ({ i, ts: i }))
          .assignTimestamps((r) => r.ts)
          .windowAll(Windows.tumbling(250))
          .count()
          .collect();
      },
      { parallelism: 4 },
    );
    assert.deepEqual(
      sortBy(out, (r) => r.start).map((r) => [r.start, r.count]),
      [
        [0, 250],
        [250, 250],
        [500, 250],
        [750, 250],
      ],
    );
  });
});
