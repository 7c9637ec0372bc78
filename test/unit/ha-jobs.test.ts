// The takeover's decisions in-process, with a real job store in a temp dir and the placement stubbed:
// which restore point each job resumes from, a job that lacks slots parked and retried when a worker
// registers, any other failure dropped loudly, a job already running skipped.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { HaJobs } from '../../src/coordinator/ha-jobs.js';
import { NotEnoughSlotsError, type CompletedMarker } from '../../src/coordinator/index.js';
import type { JobState } from '../../src/coordinator/job-state.js';
import { NO_CHECKPOINTS } from '../../src/client/index.js';
import { HaJobStore, type JobManifest } from '../../src/ha/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const MODULE = { sha256: 'f'.repeat(64), bytes: new Uint8Array([1, 2, 3]), sourceMap: new Uint8Array(0) };
const manifest = (jobId: string, checkpoint: Partial<JobManifest['checkpoint']> = {}): JobManifest => ({
  jobId,
  jobName: `job-${jobId}`,
  specJson: '{}',
  params: '{}',
  buildParallelism: 1,
  checkpoint: { ...NO_CHECKPOINTS, ...checkpoint },
  moduleSha256: MODULE.sha256,
  submittedAt: 1,
});

async function harness(
  o: { slotsFor?: Set<string>; failing?: Set<string>; damaged?: Set<string>; running?: Set<string> } = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'clink-hajobs-'));
  dirs.push(dir);
  const old = new HaJobStore(dir, 1);
  const marker = (id: number): CompletedMarker => ({ checkpointId: id }) as CompletedMarker;
  const started: [string, number][] = [];
  const { log, lines } = memoryLogger();
  const metrics = new ClinkMetrics();
  const ha = new HaJobs({
    store: new HaJobStore(dir, 2),
    epoch: 2,
    log,
    metrics,
    settle: async () => undefined,
    running: (id) => o.running?.has(id) === true || started.some(([s]) => s === id),
    // As newestOwnRestore (restore-points.ts): every checkpoint damaged falls back to the submitted restore point (undefined), or throws without one.
    ownRestore: async (m) => {
      if (o.damaged?.has(m.jobId)) {
        if (m.checkpoint.restoreFromDir) return undefined;
        throw new Error(`restore: no usable checkpoint in ${m.jobId}`);
      }
      return m.jobId === 'a' ? marker(7) : undefined;
    },
    holdModule: () => undefined,
    place: async (m, resubmission) => {
      if (o.failing?.has(resubmission.jobId)) throw new Error('invalid job graph');
      if (o.slotsFor && !o.slotsFor.has(resubmission.jobId)) throw new NotEnoughSlotsError(2, 0, 0);
      const job = { id: resubmission.jobId, name: m.jobName, module: MODULE, startedAt: 0 } as unknown as JobState;
      return { job, placement: new Map(), restore: resubmission.ownRestore };
    },
    start: ({ job, restore }) => void started.push([job.id, restore?.checkpointId ?? 0]),
    cancel: () => undefined,
  });
  return { old, ha, started, lines, metrics, slotsFor: o.slotsFor };
}

test('each persisted job is taken over from its own newest checkpoint, else from the beginning, its manifest written again at the new epoch', async () => {
  const h = await harness();
  await h.old.persist(manifest('a', { checkpointDir: '/ck' }), MODULE);
  await h.old.persist(manifest('b'), MODULE);
  await h.ha.run();
  assert.deepEqual(h.started, [
    ['a', 7],
    ['b', 0],
  ]);
  assert.deepEqual(
    (await h.old.manifests()).map((m) => [m.jobId, (m as JobManifest & { epoch: number }).epoch]),
    [
      ['a', 2],
      ['b', 2],
    ],
  );
  assert.equal(await h.metrics.value('clink_ha_jobs_recovered_total'), 2);
});

test('a job without slots is parked and taken over when capacity comes; one already running is skipped', async () => {
  const slotsFor = new Set<string>();
  const h = await harness({ slotsFor, running: new Set(['c']) });
  await h.old.persist(manifest('a', { checkpointDir: '/ck' }), MODULE);
  await h.old.persist(manifest('c'), MODULE);
  await h.ha.run();
  assert.deepEqual(h.started, []);
  assert.ok(
    h
      .lines()
      .some((l) => /^job a \(job-a\) waits for slots to be taken over: not enough free slots/.test(String(l.msg))),
  );
  slotsFor.add('a');
  await h.ha.capacityChanged();
  assert.deepEqual(h.started, [['a', 7]], 'with the restore point the takeover decided');
  await h.ha.capacityChanged();
  assert.deepEqual(h.started, [['a', 7]], 'once');
});

test('any other failure drops the job loudly; damaged checkpoints fall back to the submitted restore point, or drop a job without one', async () => {
  const h = await harness({ failing: new Set(['x']), damaged: new Set(['d', 'e']) });
  await h.old.persist(manifest('x'), MODULE);
  await h.old.persist(manifest('d', { checkpointDir: '/ck', restoreFromDir: '/savepoint' }), MODULE);
  await h.old.persist(manifest('e', { checkpointDir: '/ck' }), MODULE);
  await h.ha.run();
  assert.deepEqual(h.started, [['d', 0]]);
  const errors = h
    .lines()
    .filter((l) => l.level === 50)
    .map((l) => String(l.msg));
  assert.deepEqual(errors, [
    'job e (job-e) could not be taken over and is not running: restore: no usable checkpoint in e; submit it again',
    'job x (job-x) could not be taken over and is not running: invalid job graph; submit it again',
  ]);
  assert.equal(await h.metrics.value('clink_ha_recovery_failed_total'), 2);
});
