// Issue 52's run through its faults: a datagen offering 40 000 rows/s into a stage taking 5 ms a row, p=2
// on two workers, unaligned checkpoints every 2 s into the transactional file sink. A worker is killed
// (kill -9) once a checkpoint has persisted records in flight; the job restores from such a checkpoint;
// then it is canceled once another has, and submitted again at parallelism 3 from it, so the records in
// flight are divided among three subtasks. Every id must be written exactly once.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobView } from '../../src/coordinator/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { visibleLines } from '../helpers.js';

const JOB = resolve(import.meta.dirname, '../../bench/jobs/backpressure.ts');
/** About 25 s of the slow stage's work at p=2: long enough for both faults, short enough for the suite. */
const COUNT = 10_000;

interface CheckpointRow {
  checkpointId: number;
  kind: string;
  alignment: string;
  inflightBytes: number;
}

test(
  'kill -9 under backpressure restores from an unaligned checkpoint, and a restore from one at parallelism 3 is exact, every id once',
  { timeout: 600_000 },
  async (t) => {
    const h = await ClusterHarness.start({
      workers: 3,
      slots: 1,
      coordinatorArgs: ['--restart-backoff-initial-ms=200'],
    });
    try {
      const loaded = await loadJobModule(JOB, { cacheDir: join(h.dir, 'c') });
      const out = join(h.dir, 'out');
      const ckpt = join(h.dir, 'ckpt');
      const params = { rate: '40000', slowUs: '5000', count: String(COUNT), out };
      const client = await h.client();
      const submit = async (parallelism: number, restoreFromDir = ''): Promise<string> =>
        (
          await client.submit({
            module: loaded,
            spec: buildJob(loaded.job, { parallelism, params }).spec,
            params,
            buildParallelism: parallelism,
            checkpoint: { checkpointDir: ckpt, intervalMs: 2_000, alignment: 'unaligned', restoreFromDir },
          })
        ).jobId;
      const view = async (id: string): Promise<JobView> => (await h.http<JobView>(`/api/v1/jobs/${id}`)).body;
      const checkpoints = async (id: string): Promise<CheckpointRow[]> =>
        (await h.http<{ checkpoints: CheckpointRow[] }>(`/api/v1/jobs/${id}/checkpoints`)).body.checkpoints;
      /** The id of the job's newest checkpoint once that one is unaligned with records in flight, newer than `after`. */
      const unalignedWithRecordsInFlight = async (id: string, after: number): Promise<number> => {
        for (;;) {
          const v = await view(id);
          if (v.state === 'FINISHED' || v.state === 'FAILED' || v.state === 'CANCELED')
            throw new Error(
              `job ${id} ${v.state} before an unaligned checkpoint with records in flight: ${v.error ?? ''}; ` +
                `restarts: ${JSON.stringify(v.restarts)}; checkpoints: ${JSON.stringify(await checkpoints(id))}`,
            );
          const newest = (await checkpoints(id)).filter((c) => c.kind === 'periodic').at(-1);
          if (newest && newest.checkpointId > after && newest.alignment === 'unaligned' && newest.inflightBytes > 0)
            return newest.checkpointId;
          await sleep(50);
        }
      };
      const isUnalignedWithRecordsInFlight = async (id: string, checkpointId: number): Promise<CheckpointRow> => {
        const c = (await checkpoints(id)).find((k) => k.checkpointId === checkpointId);
        assert.ok(c, `checkpoint ${checkpointId} of job ${id} is listed`);
        assert.equal(c.alignment, 'unaligned');
        assert.ok(c.inflightBytes > 0, `checkpoint ${checkpointId} persisted records in flight`);
        return c;
      };

      // 1. kill -9 of a worker running the job, once a checkpoint holds records in flight.
      const first = await submit(2);
      await unalignedWithRecordsInFlight(first, 0);
      const running = (await view(first)).subtasks.filter((s) => !s.finished);
      const victim = running[0]!.workerId;
      h.worker(victim).child.kill('SIGKILL');
      await h.waitForLog(h.coordinator, new RegExp(`^worker lost: ${victim} `));
      let restored: JobView;
      do {
        restored = await view(first);
        await sleep(50);
      } while (restored.restarts.length === 0 || restored.state !== 'RUNNING');
      const restoredFrom = restored.restarts[0]!.restoredFrom;
      const killedAt = await isUnalignedWithRecordsInFlight(first, restoredFrom);

      // 2. Canceled once it has taken another such checkpoint, and submitted again at parallelism 3 from it.
      const last = await unalignedWithRecordsInFlight(first, restoredFrom);
      await client.cancel(first);
      const ended = await client.waitForCompletion(first);
      assert.equal(ended.state, 'CANCELED', 'the job was still running when canceled');
      await h.addWorker(); // a third slot, for parallelism 3
      const second = await submit(3, join(ckpt, '_jobs', first));
      const record = JSON.parse(await readFile(join(ckpt, '_jobs', second, 'RESTORED'), 'utf8')) as {
        checkpointId: number;
      };
      const newest = (await checkpoints(first)).filter((c) => c.kind === 'periodic').at(-1)!;
      assert.equal(record.checkpointId, newest.checkpointId, 'restored from the newest checkpoint');
      assert.ok(newest.checkpointId >= last);
      const rescaledFrom = await isUnalignedWithRecordsInFlight(first, newest.checkpointId);
      const done = await client.waitForCompletion(second);
      assert.equal(done.ok, true, done.error);
      assert.equal((await view(second)).subtasks.filter((s) => s.taskId.includes('map')).length, 3);

      const lines = await visibleLines(out);
      const seen = new Map<string, number>();
      for (const l of lines) seen.set(l, (seen.get(l) ?? 0) + 1);
      const twice = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
      const missing = Array.from({ length: COUNT }, (_, i) => String(i)).filter((id) => !seen.has(id));
      assert.deepEqual({ twice: twice.slice(0, 10), missing: missing.slice(0, 10) }, { twice: [], missing: [] });
      assert.equal(lines.length, COUNT);
      t.diagnostic(
        `restored from checkpoint ${restoredFrom} (${killedAt.inflightBytes} bytes in flight) after kill -9 of ${victim}; ` +
          `at parallelism 3 from checkpoint ${newest.checkpointId} (${rescaledFrom.inflightBytes} bytes in flight)`,
      );
      client.close();
    } finally {
      await h.close();
    }
  },
);
