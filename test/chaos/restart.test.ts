import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterClient } from '../../src/client/index.js';
import type { JobView } from '../../src/coordinator/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness, type HarnessOptions } from '../harness/cluster.js';
import { submitSinkJob } from '../harness/file-sink-job.js';
import { fakeWorker } from '../harness/fake-worker.js';
import { makeMessage } from '../../src/protocol/index.js';
import { SCENARIO, visibleLines } from '../helpers.js';

interface Running {
  h: ClusterHarness;
  client: ClusterClient;
  jobId: string;
  out: string;
  /** What an uninterrupted run writes. */
  expected: string[];
  view(): Promise<JobView>;
  /** kill -9 the worker running the job's first subtask; returns its id. */
  killAWorker(): Promise<string>;
}

/**
 * A cluster running the windowed file-sink job at parallelism 2 (4 subtasks), checkpointing every
 * 500 ms, with at least one checkpoint completed.
 */
async function runningJob(options: HarnessOptions, maxRestarts = -1, rate = 3000): Promise<Running> {
  const h = await ClusterHarness.start(options);
  try {
    const { jobId, client, out, expected } = await submitSinkJob(h, { rate, maxRestartsOnWorkerLoss: maxRestarts });
    let checkpoints = 0;
    for (let i = 0; i < 200 && checkpoints === 0; i++) {
      await sleep(25);
      checkpoints = (await h.http<{ checkpoints: unknown[] }>(`/api/v1/jobs/${jobId}/checkpoints`)).body.checkpoints
        .length;
    }
    assert.ok(checkpoints > 0, 'a checkpoint completed before the kill');
    const view = async (): Promise<JobView> => (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
    return {
      h,
      client,
      jobId,
      out,
      expected,
      view,
      killAWorker: async () => {
        const victim = (await view()).subtasks.find((t) => !t.finished)!.workerId;
        h.worker(victim).child.kill('SIGKILL');
        return victim;
      },
    };
  } catch (err) {
    await h.close();
    throw err;
  }
}

/** Resolve once the wall clock passes `at` (a deadline the test measures against, not a guess at how long something takes). */
async function untilTime(at: number): Promise<void> {
  while (Date.now() < at) await sleep(Math.min(50, at - Date.now()));
}

describe('restart from the last checkpoint on worker loss', () => {
  test(
    'kill -9 of a worker mid-stream: the job restarts on the survivors from its checkpoint and writes the uninterrupted output, every record once',
    SCENARIO,
    async () => {
      const r = await runningJob({ workers: 3, slots: 4 });
      try {
        const victim = await r.killAWorker();
        const done = await r.client.waitForCompletion(r.jobId);
        assert.equal(done.ok, true, done.error);
        const after = await r.view();
        assert.equal(after.restarts.length, 1, JSON.stringify(after.restarts));
        assert.equal(after.restarts[0]!.cause, `worker lost: ${victim} (heartbeat timeout)`);
        assert.ok(after.restarts[0]!.restoredFrom > 0, 'resumed from a checkpoint, not from the start');
        assert.ok(
          after.subtasks.every((t) => t.workerId !== victim),
          'nothing runs on the dead worker',
        );
        assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
        await r.h.waitForLog(
          r.h.coordinator,
          new RegExp(
            `^job ${r.jobId} \\(ckpt-file-sink\\) restarting after worker lost: ${victim} \\(heartbeat timeout\\) \\(restart 1 of 10\\)$`,
          ),
        );
        assert.match((await r.h.http('/metrics')).text, /^clink_job_restarts_total 1$/m);
      } finally {
        await r.h.close();
      }
    },
  );

  test(
    'two workers killed at once (the second lost while the first restart drains): one restart on the others, exact output',
    SCENARIO,
    async () => {
      const r = await runningJob({ workers: 4, slots: 2 });
      try {
        const hosts = [...new Set((await r.view()).subtasks.map((t) => t.workerId))];
        assert.equal(hosts.length, 2, `the two pipeline instances on two workers: ${hosts.join(', ')}`);
        for (const id of hosts) r.h.worker(id).child.kill('SIGKILL');
        const done = await r.client.waitForCompletion(r.jobId);
        assert.equal(done.ok, true, done.error);
        const after = await r.view();
        assert.ok(
          after.subtasks.every((t) => !hosts.includes(t.workerId)),
          'nothing runs on the dead workers',
        );
        assert.ok(after.restarts.length >= 1 && after.restarts.length <= 2, JSON.stringify(after.restarts));
        assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
      } finally {
        await r.h.close();
      }
    },
  );

  // One slot per subtask (--slot-sharing off), so the job needs 4 and a 1-slot worker is not enough.
  // The timings are margins, not guesses: the worker added registers between 4 s and 12 s into the
  // restart (a spawn takes well under 8 s even on a loaded machine), so its registration moves the
  // deadline past the check at 12.5 s by at least 3.5 s, which the replacement's spawn has to register
  // in (1.5 s was not always enough on a loaded CI machine).
  test(
    'a restart waits for slots the survivors lack; a worker registering meanwhile starts the capacity clock again; a replacement brings them; exact output',
    SCENARIO,
    async () => {
      const capacityMs = 12_000;
      const r = await runningJob({
        workers: 2,
        slots: 2,
        coordinatorArgs: [`--restart-capacity-timeout-ms=${capacityMs}`, '--slot-sharing=off'],
      });
      try {
        await r.killAWorker();
        await r.h.waitForJob(r.jobId, ['RESTARTING']);
        const restartAt = Date.now();
        await untilTime(restartAt + 4_000);
        await r.h.addWorker(['--slots=1']); // 3 free slots of the 4 needed: not enough, but the clock starts again
        assert.ok(
          Date.now() < restartAt + capacityMs,
          `the worker registered ${Date.now() - restartAt} ms into the restart, before its first deadline`,
        );
        await untilTime(restartAt + capacityMs + 500);
        assert.equal((await r.view()).state, 'RESTARTING', 'still waiting, past the first deadline');
        await r.h.addWorker();
        const done = await r.client.waitForCompletion(r.jobId);
        assert.equal(done.ok, true, done.error);
        assert.deepEqual(await visibleLines(r.out), r.expected);
      } finally {
        await r.h.close();
      }
    },
  );

  test(
    'a restart that finds no slots within --restart-capacity-timeout-ms fails the job, saying so',
    SCENARIO,
    async () => {
      const r = await runningJob({ workers: 2, slots: 1, coordinatorArgs: ['--restart-capacity-timeout-ms=800'] });
      try {
        const victim = await r.killAWorker();
        const done = await r.client.waitForCompletion(r.jobId);
        assert.equal(done.state, 'FAILED');
        assert.equal(
          done.error,
          `restart after worker lost: ${victim} (heartbeat timeout) failed: not enough free slots: the job needs 2 (slot sharing group 'default': 2), 1 of the cluster's 1 are free`,
        );
      } finally {
        await r.h.close();
      }
    },
  );

  test(
    'the restart budget: with --max-restarts-from-checkpoint 1 a second loss fails the job; 0 fails fast',
    SCENARIO,
    async () => {
      const r = await runningJob({ workers: 3, slots: 4 }, 1, 1500);
      try {
        await r.killAWorker();
        for (
          let i = 0;
          i < 400 && !((await r.view()).restarts.length === 1 && (await r.view()).state === 'RUNNING');
          i++
        )
          await sleep(25);
        assert.equal((await r.view()).state, 'RUNNING', 'running again after the first restart');
        const second = await r.killAWorker();
        const done = await r.client.waitForCompletion(r.jobId);
        assert.equal(done.state, 'FAILED');
        assert.equal(done.error, `worker lost: ${second} (heartbeat timeout); the 1 restarts allowed are spent`);
        assert.equal((await r.view()).restarts.length, 1);
      } finally {
        await r.h.close();
      }
      const z = await runningJob({ workers: 2, slots: 4 }, 0);
      try {
        const victim = await z.killAWorker();
        const done = await z.client.waitForCompletion(z.jobId);
        assert.equal(done.state, 'FAILED');
        assert.equal(
          done.error,
          `worker lost: ${victim} (heartbeat timeout); restarts are off (--max-restarts-from-checkpoint 0)`,
        );
      } finally {
        await z.h.close();
      }
    },
  );
});

test(
  'a survivor that never drains fails the job at --restart-drain-timeout-ms, naming the subtask and its worker',
  SCENARIO,
  async () => {
    // One real worker and one that runs nothing: it says its subtasks listen, then ignores every
    // CancelJob, as a worker whose cancellation is broken would.
    const h = await ClusterHarness.start({
      workers: 1,
      slots: 1,
      coordinatorArgs: ['--restart-drain-timeout-ms=1500'],
    });
    const deaf = await fakeWorker(h.controlPort, 'deaf', {
      slots: 1,
      onMessage: (m, w) => {
        if (m.type === 'Deploy')
          for (const t of m.tasks)
            w.send(
              makeMessage('SubtaskListening', {
                jobId: m.jobId,
                taskId: t.taskId,
                subtaskIndex: t.subtaskIndex,
                edgePorts: [],
              }),
            );
      },
    });
    try {
      await h.waitForWorkers(2);
      const loaded = await loadJobModule(resolve(import.meta.dirname, '../fixtures/jobs/unbounded-forward.ts'), {
        cacheDir: join(h.dir, 'c'),
      });
      const client = await h.client();
      const { jobId } = await client.submit({
        module: loaded,
        spec: buildJob(loaded.job, { parallelism: 2 }).spec,
        params: {},
        buildParallelism: 2,
        checkpoint: { checkpointDir: join(h.dir, 'ckpt') },
      });
      const running = await h.waitForJob<JobView>(jobId, ['RUNNING']);
      const survivor = running.subtasks.find((t) => t.workerId === 'deaf')!;
      const victim = running.subtasks.find((t) => t.workerId !== 'deaf')!;
      h.worker(victim.workerId).child.kill('SIGKILL');
      const done = await client.waitForCompletion(jobId);
      assert.equal(done.state, 'FAILED');
      assert.equal(
        done.error,
        `restart after worker lost: ${victim.workerId} (heartbeat timeout): not drained within 1500 ms: ${survivor.taskId}#${survivor.index} on worker deaf`,
      );
    } finally {
      deaf.socket.destroy();
      await h.close();
    }
  },
);
