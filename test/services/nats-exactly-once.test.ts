// Seeded exactly-once chaos with a NATS source submitted at -p 4 (it runs at 1, however it is named):
// orders published while the job runs, a running count and sum per key in keyed state, NATS out with
// each record's id as its message id. Through kill -9 of workers and a damaged newest checkpoint (the
// restart falls back to the one before: the sink's ids make that harmless), every id is written once
// and every key's state went 1, 2, ... n with the right sums. A failure names its seed; CLINK_CHAOS_SEEDS
// replays it.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobView } from '../../src/coordinator/index.js';
import { damageNewestThenKill, killWorkersAtRandom, prng, startPipe } from '../harness/chaos-job.js';
import { createStream, natsServer, publishJson, readStream, streamCount, streamName } from '../harness/nats.js';
import { waitFor } from '../helpers.js';

const SEEDS = (process.env.CLINK_CHAOS_SEEDS ?? '1,2,3').split(',').map(Number);
const ORDERS = 12_000;
const KEYS = 40;
const order = (id: number): { id: number; key: number; amount: number } => ({
  id,
  key: id % KEYS,
  amount: ((id * 7) % 10) + 1,
});

interface Total {
  id: number;
  key: number;
  count: number;
  sum: number;
}

for (const seed of SEEDS) {
  test(
    `exactly once from a NATS source submitted at -p 4, through kill -9 and a damaged newest checkpoint (seed ${seed})`,
    { timeout: 240_000 },
    async (t) => {
      const server = natsServer();
      const random = prng(seed);
      const input = streamName('orders');
      const output = streamName('totals');
      await createStream(server, input);
      await createStream(server, output);
      const pipe = await startPipe(
        resolve(import.meta.dirname, '../fixtures/jobs/nats-keyed.ts'),
        { server, stream: input, subject: `${output}.out`, prefix: output },
        { parallelism: 4, checkpoint: { checkpointsRetained: 3 } },
      );
      const log: string[] = [];
      try {
        // Published while the job runs, a batch at a time: faults land mid-stream.
        let published = 0;
        const publishing = (async () => {
          for (; published < ORDERS; published += 200) {
            await publishJson(
              server,
              `${input}.new`,
              Array.from({ length: 200 }, (_, i) => order(published + i)),
            );
            await sleep(100);
          }
        })();
        const view = await pipe.view();
        const sourceTask = view.subtasks.filter((s) => s.taskId === 'orders');
        assert.equal(
          sourceTask.length,
          1,
          `the source runs once at -p 4: ${JSON.stringify(view.subtasks.map((s) => s.taskId))}`,
        );
        const damageAt = Math.floor(random() * 3);
        for (let step = 0; step < 3; step++) {
          if (step === damageAt) {
            const { damaged } = await damageNewestThenKill(pipe.h, pipe.jobId, join(pipe.h.dir, 'ckpt'));
            log.push(`damaged checkpoint ${damaged}, kill -9`);
            await pipe.h.waitForLog(
              pipe.h.coordinator,
              new RegExp(
                `^checkpoint ${damaged} is unusable \\(.*\\); job ${pipe.jobId} falls back to checkpoint \\d+ \\(its sinks repeat nothing a replay writes\\)$`,
              ),
            );
          } else log.push(...(await killWorkersAtRandom(pipe, random, 1)));
        }
        await publishing;
        await waitFor(
          `all ${ORDERS} totals in the output stream (seed ${seed}: ${log.join('; ')})`,
          async () => (await streamCount(server, output)) >= ORDERS,
          90_000,
        );
        const totals = (await readStream(server, output)).map((m) => m.value as Total);
        const ids = totals.map((r) => r.id).sort((a, b) => a - b);
        assert.deepEqual(
          ids,
          Array.from({ length: ORDERS }, (_, i) => i),
          `seed ${seed} (${log.join('; ')}): each id exactly once`,
        );
        // Every key's state: its counts were 1, 2, ... n, and each record's sum is the sum of its key's amounts so far.
        const byKey = new Map<number, Total[]>();
        for (const r of totals) (byKey.get(r.key) ?? byKey.set(r.key, []).get(r.key)!).push(r);
        for (const [key, rows] of byKey) {
          rows.sort((a, b) => a.count - b.count);
          const ids = Array.from({ length: ORDERS }, (_, i) => i).filter((i) => i % KEYS === key);
          assert.deepEqual(
            rows.map((r) => r.count),
            ids.map((_, i) => i + 1),
            `seed ${seed}: key ${key}'s count went up by one per order`,
          );
          let sum = 0;
          assert.deepEqual(
            rows.map((r) => r.sum),
            ids.map((id) => (sum += order(id).amount)),
            `seed ${seed}: key ${key}'s sums`,
          );
        }
        assert.equal((await pipe.view()).guarantee.level, 'exactly-once');
        t.diagnostic(
          `seed ${seed}: ${log.join('; ')}; restarts ${(await pipe.h.http<JobView>(`/api/v1/jobs/${pipe.jobId}`)).body.restarts.length}`,
        );
      } finally {
        await pipe.client.cancel(pipe.jobId).catch(() => undefined);
        await pipe.h.close();
      }
    },
  );
}
