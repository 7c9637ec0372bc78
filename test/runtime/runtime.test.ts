import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ClinkError,
  defineConnector,
  defineJob,
  runJob,
  startJob,
  UserCodeError,
  Windows,
  type JobEnvironment,
} from '../../src/index.js';
import { assertNoLeaks, collect, sortBy } from '../helpers.js';

describe('local runtime', () => {
  test('a slow sink slows the source: queues never hold more than their bound', async () => {
    let written = 0;
    let maxLag = 0;
    let produced = 0;
    const slowSink = defineConnector<never, number>({
      name: 'slow',
      sink: {
        createWriter: () => ({
          write() {
            written++;
            maxLag = Math.max(maxLag, produced - written);
          },
          flush: () => sleep(1),
        }),
      },
    });
    const exec = startJob(
      defineJob({ name: 'slow', version: '1' }, (env) => {
        env
          .fromSequence(1, 200_000)
          .map((x) => {
            produced++;
            return x;
          })
          .rebalance()
          .sinkTo(slowSink);
      }),
      { batchSize: 100, queueCapacity: 4 },
    );
    await exec.done;
    const sinkTask = exec.metrics().find((t) => t.task.includes('slow'))!;
    assert.equal(written, 200_000);
    // The bound is the queue capacity, plus the one batch a producer may push before it sees the queue full.
    assert.ok(sinkTask.queueHighWaterBatches <= 4 + 1, `queue held ${sinkTask.queueHighWaterBatches} batches`);
    // Records produced but not yet written never exceed what the queue and one in-flight batch can hold.
    assert.ok(maxLag <= (4 + 2) * 100, `source ran ${maxLag} records ahead of the sink`);
  });

  test('an exception in user code fails the job with the operator’s name and the original stack', async () => {
    function parseAmount(s: string): number {
      if (s === 'bad') throw new RangeError(`cannot parse '${s}'`);
      return Number(s);
    }
    const err = await runJob(
      defineJob({ name: 'fails', version: '1' }, (env) => {
        env.fromElements(['1', 'bad', '3']).map(parseAmount).name('parse amount').collect();
      }),
    ).then(
      () => assert.fail('job should fail'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof UserCodeError);
    assert.ok(err instanceof ClinkError);
    assert.equal(err.code, 'CLINK_ERR_USER_CODE');
    assert.equal(err.operatorName, 'parse amount');
    assert.match(err.message, /operator 'parse amount' \(map, subtask 1\/1\) failed: RangeError: cannot parse 'bad'/);
    assert.ok(err.cause instanceof RangeError);
    assert.match((err.cause as Error).stack!, /parseAmount/);
  });

  test('a failing subtask stops the other subtasks and the job', async () => {
    await assertNoLeaks(async () => {
      await assert.rejects(
        collect(
          (env) => {
            env
              .fromSource<{ id: number }>('datagen', { rowsPerSecond: 1_000 }) // unbounded
              .keyBy((r) => r.id % 4)
              .map((r) => {
                if (r.id === 50) throw new Error('boom at 50');
                return r;
              })
              .collect();
          },
          { parallelism: 2 },
        ),
        /boom at 50/,
      );
    });
  });

  test('cancel() stops an unbounded job and leaves nothing running', async () => {
    await assertNoLeaks(async () => {
      const exec = startJob(
        defineJob({ name: 'forever', version: '1' }, (env) => {
          env
            .fromSource('datagen', { rowsPerSecond: 500 })
            .keyBy(() => 1)
            .window(Windows.tumbling(10), { time: 'processing' })
            .count()
            .collect();
        }),
        { parallelism: 2 },
      );
      await sleep(100);
      exec.cancel();
      await assert.rejects(exec.done, (e: unknown) => e instanceof ClinkError && e.code === 'CLINK_ERR_CANCELLED');
      assert.ok(exec.metrics().every((t) => t.states.every((s) => s === 'CANCELED' || s === 'FAILED')));
    });
  });

  test('an abort signal from the caller cancels the job', async () => {
    const ac = new AbortController();
    const p = runJob(
      defineJob({ name: 'abort', version: '1' }, (env) => env.fromSource('datagen', {}).collect()),
      { signal: ac.signal },
    );
    setTimeout(() => ac.abort(new Error('caller gave up')), 20);
    await assert.rejects(p, /caller gave up/);
  });

  const jobs: Record<string, (env: JobEnvironment) => void> = {
    'keyed running count': (env) => {
      env
        .fromSequence(1, 5_000)
        .map((x) => `w${x % 37}`)
        .keyBy((w) => w)
        .count()
        .collect();
    },
    'union, rebalance and filter': (env) => {
      const a = env.fromSequence(1, 3_000);
      const b = env
        .fromSequence(10_000, 12_000)
        .rebalance()
        .map((x) => x * 2);
      a.union(b)
        .filter((x) => x % 3 !== 0)
        .collect();
    },
    'sliding window over datagen': (env) => {
      env
        .fromSource<{ k: number; v: number; ts: number }>('datagen', {
          count: 20_000,
          seed: 3,
          fields: {
            k: { kind: 'int', min: 1, max: 20 },
            v: { kind: 'int', min: 0, max: 9 },
            ts: { kind: 'timestamp', stepMs: 3, jitterMs: 40 },
          },
        })
        .assignTimestamps((r) => r.ts, { maxOutOfOrdernessMs: 40 })
        .keyBy((r) => r.k)
        .window(Windows.sliding(1_000, 250))
        .reduce((x, y) => ({ ...x, v: x.v + y.v }))
        .map((r) => ({ k: r.k, v: r.v }))
        .collect();
    },
    'session windows and keyed process': (env) => {
      env
        .fromSequence(0, 9_999)
        .map((i) => ({ k: i % 13, ts: i * 10 + (i % 7 === 0 ? 500 : 0) }))
        .assignTimestamps((r) => r.ts, { maxOutOfOrdernessMs: 600 })
        .keyBy((r) => r.k)
        .window(Windows.session(100))
        .count()
        .keyBy((c) => c.key)
        .process<string>({
          processElement(c, ctx, out) {
            const n = ctx.state.value<number>('n');
            n.update((n.value() ?? 0) + c.count);
            out.collect(`${c.key}:${c.start}:${c.count}:${n.value()}`);
          },
        })
        .collect();
    },
  };

  for (const [name, build] of Object.entries(jobs)) {
    test(`parallelism > 1 gives the same results as parallelism 1: ${name}`, async () => {
      const one = sortBy(await collect(build, { parallelism: 1 }));
      assert.ok(one.length > 0);
      for (const p of [2, 5])
        assert.deepEqual(sortBy(await collect(build, { parallelism: p })), one, `parallelism ${p}`);
    });
  }

  test('an idle input does not hold back the watermark of a union', async () => {
    // One input produces a single record and then stays silent without ending; the other advances.
    const quiet = defineConnector<{ ts: number }, never>({
      name: 'quiet',
      source: {
        createReader: (_o, ctx) => {
          let sent = false;
          return {
            async read(out) {
              if (!sent) {
                sent = true;
                out.collect({ ts: 0 });
                return 'MORE';
              }
              await sleep(5);
              return ctx.signal.aborted ? 'END' : 'MORE';
            },
          };
        },
      },
    });
    const exec = startJob(
      defineJob({ name: 'idle', version: '1' }, (env) => {
        const silent = env.fromSource(quiet).assignTimestamps((r) => r.ts, { idleTimeoutMs: 30 });
        const busy = env.fromSource<{ ts: number }>('datagen', {
          count: 200,
          rowsPerSecond: 2_000,
          fields: { ts: { kind: 'timestamp', stepMs: 10 } },
        });
        silent
          .union(busy.assignTimestamps((r) => r.ts))
          .keyBy(() => 'all')
          .window(Windows.tumbling(500))
          .count()
          .collect('windows');
      }),
    );
    const deadline = Date.now() + 5_000;
    let fired = 0;
    while (Date.now() < deadline && fired === 0) {
      await sleep(20);
      fired = exec.metrics().find((t) => t.task.includes('window'))!.recordsOut;
    }
    exec.cancel();
    await exec.done.catch(() => undefined);
    assert.ok(fired > 0, 'windows fired while one input was idle');
  });

  test('a job that only reads and writes leaves no timers, files or sockets open', async () => {
    await assertNoLeaks(async () => {
      const out = await collect(
        (env) =>
          env
            .fromSequence(1, 10_000)
            .keyBy((x) => x % 5)
            .sum()
            .collect(),
        { parallelism: 3 },
      );
      assert.equal(out.length, 10_000);
    });
  });

  test('an unknown connector name is refused before any record flows', async () => {
    await assert.rejects(
      collect((env) => env.fromSource('kafak', {}).collect()),
      /unknown connector 'kafak'; built-in connectors are blackhole, datagen, file, kafka, nats, nexmark, postgres, print, sequence/,
    );
  });
});

describe('cancellation is bounded', () => {
  test('a source whose read never settles does not keep a cancelled job alive', async () => {
    const stuck = defineConnector<number, never>({
      name: 'stuck',
      source: { createReader: () => ({ read: () => new Promise<'MORE'>(() => undefined) }) },
    });
    await assertNoLeaks(async () => {
      const exec = startJob(defineJob({ name: 'stuck', version: '1' }, (env) => env.fromSource(stuck).collect()));
      setTimeout(() => exec.cancel(), 20);
      await assert.rejects(exec.done, /cancelled/);
    });
  });

  test('a sink whose flush never settles does not keep a cancelled job alive', async () => {
    const stuckSink = defineConnector<never, number>({
      name: 'stuck-sink',
      sink: { createWriter: () => ({ write() {}, flush: () => new Promise<void>(() => undefined) }) },
    });
    const exec = startJob(
      defineJob({ name: 'stuck-sink', version: '1' }, (env) => env.fromSequence(1, 10).sinkTo(stuckSink)),
    );
    setTimeout(() => exec.cancel(), 20);
    await assert.rejects(exec.done, /cancelled/);
  });

  test('runJob rejects (not throws) when options are invalid', async () => {
    const p = runJob(
      defineJob({ name: 'bad-opts', version: '1' }, (env) => env.fromSource('datagen', { nope: 1 }).collect()),
    );
    assert.ok(p instanceof Promise);
    await assert.rejects(p, /datagen: invalid options/);
  });
});

describe('batch linger', () => {
  async function arrivals(lingerMs: number): Promise<{ bursts: number; maxDelayMs: number; count: number }> {
    const times = await collect<[number, number]>(
      (env) => {
        env
          .fromSource('datagen', { count: 30, rowsPerSecond: 150 })
          .map(() => Date.now())
          .rebalance()
          .map((sentAt) => [sentAt, Date.now()] as [number, number])
          .collect();
      },
      { lingerMs },
    );
    const got = times.map(([, at]) => at).sort((a, b) => a - b);
    let bursts = 1;
    for (let i = 1; i < got.length; i++) if (got[i]! - got[i - 1]! > 3) bursts++;
    return { bursts, maxDelayMs: Math.max(...times.map(([sent, at]) => at - sent)), count: times.length };
  }

  test('a partly filled batch waits at most the linger bound, and leaves in fewer, fuller batches', async () => {
    const eager = await arrivals(0);
    const lingering = await arrivals(60);
    assert.equal(eager.count, 30);
    assert.equal(lingering.count, 30);
    assert.ok(eager.maxDelayMs < 40, `without linger records waited up to ${eager.maxDelayMs} ms`);
    assert.ok(lingering.maxDelayMs <= 60 + 40, `with a 60 ms linger records waited up to ${lingering.maxDelayMs} ms`);
    assert.ok(lingering.bursts < eager.bursts / 2, `${lingering.bursts} arrivals with linger, ${eager.bursts} without`);
  });
});
