// A JobMaster in-process with the real recovery, checkpoint coordinator, deployer and slot waiter, on a
// fake clock, fake checkpoint storage and stand-in worker sessions that record what is posted to them.
// The job lifecycle end to end (deploy, run, fail, drain, restart, retry, complete) in milliseconds.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DEFAULT_COORDINATOR_CONFIG,
  type CheckpointStorage,
  type CompletedMarker,
  type CoordinatorConfig,
} from '../../src/coordinator/index.js';
import { Deployer } from '../../src/coordinator/deployer.js';
import { JobMaster, type JobServices } from '../../src/coordinator/job-master.js';
import type { JobState, SubtaskState, WorkerSession } from '../../src/coordinator/job-state.js';
import { placeSubmittedJob } from '../../src/coordinator/job-submission.js';
import { ModuleCache } from '../../src/coordinator/module-cache.js';
import { SlotWaiter } from '../../src/coordinator/slot-waiter.js';
import { NO_CHECKPOINTS, type CheckpointSettings } from '../../src/client/index.js';
import { buildJob, defineJob } from '../../src/index.js';
import { StorageError } from '../../src/errors.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics, NO_TRACING } from '../../src/metrics/index.js';
import { subtaskKey } from '../../src/plan/index.js';
import type { Message, MessageOf } from '../../src/protocol/index.js';
import { FakeClock } from '../harness/fake-clock.js';

const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

const LOST = (id: string): string => `worker lost: ${id} (heartbeat timeout)`;

/** A chained job (source -> map -> collect) of parallelism 2: two failover regions, one per instance. */
const SPEC = buildJob(
  defineJob(
    { name: 'jm', version: '1' },
    (env) =>
      void env
        .fromSequence(1, 10)
        .map((x) => x)
        .collect('out'),
  ),
  { parallelism: 2 },
).spec;

async function harness(
  options: {
    checkpoint?: Partial<CheckpointSettings>;
    workers?: number;
    config?: Partial<CoordinatorConfig>;
    storage?: Partial<CheckpointStorage>;
    recordRestore?: () => Promise<void>;
  } = {},
) {
  const clock = new FakeClock();
  const config: CoordinatorConfig = {
    ...DEFAULT_COORDINATOR_CONFIG,
    restartBackoffInitialMs: 1_000,
    ...options.config,
  };
  const { log, lines } = memoryLogger();
  const metrics = new ClinkMetrics();
  const sessions = new Map<string, WorkerSession>();
  const posted: { to: string; m: Message }[] = [];
  const addWorker = (id: string, slots = 1): WorkerSession => {
    const s = {
      id,
      state: 'active',
      slots,
      slotShares: new Map(),
      shippedModules: new Set(),
      dataHost: '127.0.0.1',
    } as unknown as WorkerSession;
    sessions.set(id, s);
    slotWaiter.capacityChanged();
    return s;
  };
  const post = (s: WorkerSession, m: Message): void => void posted.push({ to: s.id, m });
  const slotWaiter = new SlotWaiter({
    clock,
    active: () => [...sessions.values()].filter((s) => s.state === 'active'),
    lastRegistrationAt: () => 0,
  });
  const deployer = new Deployer({ log, sessions, modules: new ModuleCache(metrics), post });
  const markers: CompletedMarker[] = [];
  let nextId = 0;
  const storage: CheckpointStorage = {
    claimId: async (_dir, floor) => (nextId = Math.max(nextId, floor) + 1),
    writeMarker: async (_dir, marker) => void markers.push(marker),
    retain: async () => undefined,
    removeState: async () => undefined,
    recordCommits: async () => undefined,
    ...options.storage,
  };
  const ended: JobState[] = [];
  const services: JobServices = {
    config,
    clock,
    log,
    metrics,
    tracer: NO_TRACING,
    checkpoints: { clock, storage, log, metrics },
    slots: slotWaiter,
    deployer,
    restores: {
      newest: async () =>
        markers.length > 0
          ? { marker: markers.at(-1)!, markerDir: '/ckpt/_jobs/job', skipped: [], committedThrough: 0 }
          : undefined,
      recordRestore: options.recordRestore ?? (async () => undefined),
    },
    post,
    stopping: () => false,
    capacityChanged: () => slotWaiter.capacityChanged(),
    ended: (job) => void ended.push(job),
  };
  for (let i = 1; i <= (options.workers ?? 2); i++) addWorker(`w${i}`);
  const submit = {
    jobName: 'jm',
    specJson: JSON.stringify(SPEC),
    modules: [{ sha256: 'abc', bytes: new Uint8Array(0), sourceMap: new Uint8Array(0) }],
    params: '{}',
    buildParallelism: 2,
    checkpoint: { ...NO_CHECKPOINTS, ...options.checkpoint },
  } as unknown as MessageOf<'SubmitJob'>;
  const placed = await placeSubmittedJob(submit, undefined, {
    config,
    clock,
    log,
    slots: slotWaiter,
    module: (sha256) => ({ sha256, bytes: new Uint8Array([1]), sourceMap: new Uint8Array(0) }),
  });
  const m = new JobMaster(placed.job, services);
  const job = m.job;
  const checkpoints = job.checkpointing;
  m.deploy(placed.placement, undefined);

  const frame = (
    st: SubtaskState,
    type: 'SubtaskListening' | 'SubtaskFinished',
    extra: Record<string, unknown> = {},
  ): void =>
    m.onFrame(st.session, {
      type,
      jobId: job.id,
      taskId: st.taskId,
      subtaskIndex: st.index,
      edgePorts: [],
      ok: true,
      error: '',
      fatal: false,
      recordsIn: 0,
      recordsOut: 0,
      collected: new Uint8Array(0),
      peerLost: false,
      ...extra,
    } as never);
  /** Every subtask not yet started reports its ports: the attempt runs. */
  const listenAll = (): void => {
    for (const st of job.subtasks.filter((t) => !t.started && !t.finished)) frame(st, 'SubtaskListening');
  };
  const on = (workerId: string): SubtaskState[] => job.subtasks.filter((t) => t.session.id === workerId && !t.finished);
  const finish = (sts: SubtaskState[], extra: Record<string, unknown> = {}): void => {
    for (const st of sts) frame(st, 'SubtaskFinished', extra);
  };
  const lose = (id: string): void => {
    const s = sessions.get(id)!;
    s.state = 'lost';
    m.onSessionGone(s, LOST(id));
  };
  /** `ms` pass and the watchdog sweeps this job. */
  const sweepAfter = async (ms: number): Promise<void> => {
    clock.advance(ms);
    m.tick(clock.now());
    await settle();
  };
  const sentTo = (id: string, type: string): Message[] =>
    posted.filter((p) => p.to === id && p.m.type === type).map((p) => p.m);
  return {
    clock,
    config,
    job,
    master: m,
    listenAll,
    on,
    finish,
    lose,
    addWorker,
    sweepAfter,
    sentTo,
    posted,
    ended,
    lines,
    markers,
    checkpoints,
    settle,
  };
}

describe('the JobMaster', () => {
  test('a job deploys, runs once every subtask listens, and finishes when every subtask has; the client gets what collect() gathered', async () => {
    const h = await harness();
    assert.equal(h.job.state, 'DEPLOYING');
    assert.equal(h.sentTo('w1', 'Deploy').length, 1);
    assert.equal(h.sentTo('w2', 'Deploy').length, 1);
    h.listenAll();
    assert.equal(h.job.state, 'RUNNING');
    assert.equal(h.sentTo('w1', 'PeerUpdate').length, 1);
    h.finish(h.on('w1'));
    assert.equal(h.job.state, 'RUNNING');
    assert.deepEqual(h.ended, []);
    h.finish(h.on('w2'));
    assert.equal(h.job.state, 'FINISHED');
    assert.deepEqual(h.ended, [h.job]);
    const done = h.master.completion();
    assert.equal(done.ok, true);
    assert.equal(done.state, 'FINISHED');
  });

  test('cancel: the subtasks are told to stop and the job ends CANCELED once they have', async () => {
    const h = await harness();
    h.listenAll();
    h.master.cancel('cancelled by client test');
    assert.equal(h.job.state, 'CANCELED');
    assert.equal(h.sentTo('w1', 'CancelJob').length, 1);
    assert.deepEqual(h.ended, []);
    h.finish([...h.on('w1'), ...h.on('w2')], { ok: false, error: 'cancelled' });
    assert.deepEqual(h.ended, [h.job]);
    assert.equal(h.master.completion().error, 'cancelled by client test');
  });

  test('a worker lost during the drain of a restart: its subtasks count as drained and the one restart goes on, waiting for slots', async () => {
    const h = await harness({ checkpoint: { checkpointDir: '/ckpt' } });
    h.listenAll();
    h.lose('w1');
    assert.equal(h.job.state, 'RESTARTING');
    assert.equal(h.sentTo('w2', 'CancelJob').length, 1);
    h.lose('w2');
    await h.settle();
    // No worker is left: the restart waits for slots (an event, not a poll), then deploys as attempt 1.
    assert.equal(h.job.state, 'RESTARTING');
    h.addWorker('w3', 2);
    await h.settle();
    assert.equal(h.job.state, 'DEPLOYING');
    assert.equal(h.job.attempt, 1);
    assert.equal(h.job.restartsSpent, 1);
    assert.deepEqual(
      h.job.restarts.map((r) => [r.cause, r.attempt, r.restoredFrom]),
      [[LOST('w1'), 1, 0]],
    );
    assert.deepEqual(new Set(h.job.subtasks.map((t) => t.session.id)), new Set(['w3']));
    h.listenAll();
    assert.equal(h.job.state, 'RUNNING');
  });

  test("a worker lost during a hot rescale: the restart is the job's, its subtasks run it again (not taken for the new ones)", async () => {
    const h = await harness({ checkpoint: { checkpointDir: '/ckpt' } });
    h.listenAll();
    let connected = 0;
    h.job.cutover = { rescaleId: 1, connected: () => void connected++ };
    h.lose('w1');
    assert.equal(h.job.state, 'RESTARTING');
    assert.equal(h.job.cutover, undefined, 'the restart ends the rescale');
    // Even a cutover still winding down when the restart's subtasks report does not take them.
    h.job.cutover = { rescaleId: 1, connected: () => void connected++ };
    h.finish(h.on('w2'), { ok: false, error: 'cancelled' });
    h.addWorker('w3', 2);
    await h.sweepAfter(1_000);
    assert.equal(h.job.state, 'DEPLOYING');
    h.listenAll();
    assert.equal(h.job.state, 'RUNNING');
    assert.equal(connected, 0);
  });

  test('a survivor that does not drain within the drain timeout fails the job, naming it and its worker', async () => {
    const h = await harness({ checkpoint: { checkpointDir: '/ckpt' }, config: { restartDrainTimeoutMs: 5_000 } });
    h.listenAll();
    h.lose('w1');
    await h.sweepAfter(4_999);
    assert.equal(h.job.state, 'RESTARTING');
    await h.sweepAfter(1);
    assert.equal(h.job.state, 'FAILED');
    const stuck = h.job.subtasks
      .filter((t) => t.session.id === 'w2')
      .map((t) => `${subtaskKey(t.taskId, t.index)} on worker w2`);
    assert.equal(h.job.error, `restart after ${LOST('w1')}: not drained within 5000 ms: ${stuck.join(', ')}`);
    assert.deepEqual(h.ended, [h.job]);
  });

  test('the restart budget: spent, the next failure fails the job saying so; a checkpoint long enough after the last restart forgives it', async () => {
    const h = await harness({
      checkpoint: { checkpointDir: '/ckpt', maxRestartsOnWorkerLoss: 1 },
      workers: 3,
      config: { restartBudgetResetAfterMs: 60_000 },
    });
    h.listenAll();
    h.lose('w1');
    h.finish(h.on('w2'), { ok: false, error: 'cancelled' });
    await h.settle();
    assert.equal(h.job.state, 'DEPLOYING');
    h.listenAll();
    assert.equal(h.job.restartsSpent, 1);
    // A checkpoint completing a minute after the restart forgives it.
    h.clock.advance(60_000);
    const id = await triggerCheckpoint(h);
    assert.equal(id, 1);
    assert.equal(h.job.restartsSpent, 0);
    // So the next loss restarts again, and the one after it is refused.
    const victim = h.job.subtasks[0]!.session.id;
    h.lose(victim);
    assert.equal(h.job.state, 'RESTARTING');
    for (const w of ['w1', 'w2', 'w3']) h.finish(h.on(w), { ok: false, error: 'cancelled' });
    h.addWorker('w4', 2);
    await h.sweepAfter(0); // a checkpoint completed since the last restart: this one is a first again, at once
    assert.equal(h.job.state, 'DEPLOYING');
    h.listenAll();
    const next = h.job.subtasks[0]!.session.id;
    h.lose(next);
    assert.equal(h.job.state, 'FAILED');
    assert.equal(h.job.error, `${LOST(next)}; the 1 restarts allowed are spent`);
  });

  test('restarts in a row back off; a checkpoint completed after a restart makes the next one immediate again', async () => {
    const h = await harness({ checkpoint: { checkpointDir: '/ckpt' }, workers: 4 });
    h.listenAll();
    const restart = async (): Promise<void> => {
      const victim = h.job.subtasks.find((t) => !t.finished)!.session.id;
      h.lose(victim);
      for (const w of ['w1', 'w2', 'w3', 'w4', 'w5', 'w6']) h.finish(h.on(w), { ok: false, error: 'cancelled' });
      h.addWorker(`w${h.job.restartsSpent + 4}`, 2);
      await h.settle();
    };
    await restart();
    assert.equal(h.job.state, 'DEPLOYING', 'the first restart at once');
    h.listenAll();
    await restart();
    assert.equal(h.job.state, 'RESTARTING', 'the second in a row waits');
    await h.sweepAfter(999);
    assert.equal(h.job.state, 'RESTARTING');
    await h.sweepAfter(1);
    assert.equal(h.job.state, 'DEPLOYING', 'after 1 s');
    h.listenAll();
    await triggerCheckpoint(h);
    await restart();
    assert.equal(h.job.state, 'DEPLOYING', 'a checkpoint completed since: at once again');
    assert.equal(h.job.restartsSpent, 3, 'the budget is not forgiven by it');
  });

  test('a final checkpoint that fails restarts the job from its last checkpoint, within the budget; one that would fail again (state that cannot be encoded) fails it', async () => {
    for (const fatal of [false, true]) {
      const h = await harness({ checkpoint: { checkpointDir: '/ckpt' } });
      h.listenAll();
      const sources = h.job.subtasks.filter(
        (t) => h.job.plan.tasks.find((x) => x.id === t.taskId)!.inputs.length === 0,
      );
      for (const t of sources)
        h.master.onFrame(t.session, {
          type: 'RequestFinalCheckpoint',
          jobId: h.job.id,
          taskId: t.taskId,
          subtaskIndex: t.index,
        });
      await h.settle();
      const id = h.checkpoints.inFlight!.id;
      assert.ok(id > 0, 'the final checkpoint was assigned');
      const t = h.job.subtasks[0]!;
      h.master.onFrame(t.session, {
        type: 'SubtaskCheckpointed',
        jobId: h.job.id,
        checkpointId: id,
        taskId: t.taskId,
        subtaskIndex: t.index,
        ok: false,
        error: 'ENOSPC: no space left on device',
        fatal,
      } as never);
      await h.settle();
      if (fatal) {
        assert.equal(h.job.state, 'FAILED');
        assert.equal(
          h.job.error,
          'its final checkpoint failed: subtask ' +
            `${t.taskId}#${t.index}` +
            ' could not snapshot: ENOSPC: no space left on device',
        );
      } else {
        assert.equal(h.job.state, 'RESTARTING');
        assert.equal(h.job.restartsSpent, 1);
        assert.match(h.job.restarting!.cause, /^its final checkpoint failed: subtask \S+ could not snapshot: ENOSPC/);
      }
    }
  });

  test('a redeploy whose RESTORED record the storage refuses is tried again as another restart with its backoff, while the budget lasts', async () => {
    let refusals = 2;
    const h = await harness({
      checkpoint: { checkpointDir: '/ckpt', maxRestartsOnWorkerLoss: 3 },
      recordRestore: async () => {
        if (refusals-- > 0)
          throw new StorageError(
            'could not write RESTORED durably in /ckpt/_jobs/j (0 of 90 bytes written): ENOSPC',
            '/ckpt/_jobs/j/RESTORED',
            0,
            90,
          );
      },
    });
    h.listenAll();
    await triggerCheckpoint(h);
    h.lose('w1');
    h.finish(h.on('w2'), { ok: false, error: 'cancelled' });
    h.addWorker('w3', 2);
    await h.settle();
    assert.equal(h.job.state, 'RESTARTING', 'the first try failed');
    assert.equal(h.job.restartsSpent, 2);
    assert.ok(
      h
        .lines()
        .some((l) =>
          /redeploy after worker lost: w1 \(heartbeat timeout\) failed: could not write RESTORED .*ENOSPC; trying again in 1000 ms \(restart 2 of 3\)$/.test(
            String(l.msg),
          ),
        ),
      JSON.stringify(h.lines().map((l) => l.msg)),
    );
    await h.sweepAfter(1_000);
    assert.equal(h.job.state, 'RESTARTING', 'the second try failed too');
    await h.sweepAfter(2_000);
    assert.equal(h.job.state, 'DEPLOYING', 'the third wrote it');
    assert.equal(h.job.restartsSpent, 3);
  });

  test('a subtask failing for a lost peer waits for the verdict on that peer; with none it heals like a loss', async () => {
    const h = await harness({ checkpoint: { checkpointDir: '/ckpt' } });
    h.listenAll();
    const [st] = h.on('w2');
    h.finish([st!], { ok: false, error: 'connection to peer reset', peerLost: true });
    assert.equal(h.job.state, 'RUNNING');
    await h.sweepAfter(h.config.heartbeatTimeoutMs + h.config.watchdogIntervalMs);
    assert.equal(h.job.state, 'RUNNING');
    await h.sweepAfter(1);
    assert.equal(h.job.state, 'RESTARTING');
    assert.equal(h.job.restarts.length, 0);
  });

  test('without checkpoints a failed subtask retries its region only, while its retries last', async () => {
    const h = await harness({ checkpoint: { maxRestarts: 1 } });
    h.listenAll();
    const [failing] = h.on('w1');
    h.finish([failing!], { ok: false, error: 'boom' });
    assert.equal(h.job.state, 'RUNNING');
    assert.equal(h.job.retrying.size, 1);
    // Its region is the one chained subtask, already ended: nothing to drain, and w2 runs on untouched.
    assert.equal(h.posted.filter((p) => p.m.type === 'CancelJob').length, 0);
    await h.sweepAfter(0); // the first retry does not back off

    assert.equal(h.job.attempt, 1);
    assert.deepEqual(
      h.job.retries.map((r) => [r.subtask, r.retry, r.attempt]),
      [[subtaskKey(failing!.taskId, failing!.index), 1, 1]],
    );
    h.listenAll();
    const again = h.on('w1').find((t) => t.taskId === failing!.taskId)!;
    h.finish([again], { ok: false, error: 'boom' });
    assert.equal(h.job.state, 'FAILED');
    assert.match(
      h.job.error!,
      /^boom; subtask \S+ failed 2 times and the 1 retries allowed \(--max-region-retries 1\) are spent$/,
    );
  });

  test('a worker lost while a savepoint is pending fails the savepoint with the cause, and the job restarts', async () => {
    const h = await harness({ checkpoint: { checkpointDir: '/ckpt' } });
    h.listenAll();
    let result: { ok: boolean; message: string } | undefined;
    void h.checkpoints.savepoint('/sp', false).then((r) => (result = r));
    await h.settle();
    assert.ok(h.checkpoints.inFlight?.savepoint);
    h.lose('w1');
    await h.settle();
    assert.equal(h.job.state, 'RESTARTING');
    assert.deepEqual(result, { ok: false, message: `savepoint 1 of job ${h.job.id} failed: ${LOST('w1')}`, path: '' });
  });

  test('a job cancelled while a checkpoint writes its marker ends only once the marker is written and older checkpoints pruned', async () => {
    // A client told "cancelled" restores from the newest marker: were it told before the marker landed,
    // it would pick the checkpoint before, whose state this checkpoint's retention is deleting.
    const steps: string[] = [];
    let release!: () => void;
    const written = new Promise<void>((r) => (release = r));
    const h = await harness({
      checkpoint: { checkpointDir: '/ckpt' },
      storage: {
        writeMarker: async () => {
          await written;
          steps.push('marker');
        },
        retain: async () => void steps.push('retain'),
      },
    });
    h.listenAll();
    const id = await triggerCheckpoint(h);
    assert.ok(h.checkpoints.markerWritten(), `checkpoint ${id}'s marker is being written`);
    h.master.cancel('cancelled by client test');
    h.finish([...h.on('w1'), ...h.on('w2')], { ok: false, error: 'cancelled' });
    await h.settle();
    assert.deepEqual(h.ended, [], 'the job waits for the marker');
    release();
    await h.settle();
    assert.deepEqual(steps, ['marker', 'retain']);
    assert.deepEqual(h.ended, [h.job]);
    assert.equal(h.job.state, 'CANCELED');
    assert.equal(h.checkpoints.history.lastId, id);
  });
});

/** Start a checkpoint by its interval and ack it from every subtask; returns its id. */
async function triggerCheckpoint(h: Awaited<ReturnType<typeof harness>>): Promise<number> {
  h.job.checkpoint = { ...h.job.checkpoint, intervalMs: 1 };
  await h.sweepAfter(1);
  const id = h.checkpoints.inFlight!.id;
  for (const t of h.job.subtasks) {
    h.master.onFrame(t.session, {
      type: 'SubtaskCheckpointed',
      jobId: h.job.id,
      checkpointId: id,
      taskId: t.taskId,
      subtaskIndex: t.index,
      ok: true,
      error: '',
      stateBytes: 1,
      alignmentMs: 0,
      stateSha256: '',
    } as never);
  }
  await h.settle();
  h.job.checkpoint = { ...h.job.checkpoint, intervalMs: 0 };
  return id;
}
