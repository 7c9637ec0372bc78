// The checkpoint coordinator in-process: a fake clock, fake storage and a recorder of what it posts,
// over a job state built from a real plan. Milliseconds, no processes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CheckpointCoordinator, SAVEPOINT_WAIT_FOR_IDLE_MS } from '../../src/coordinator/checkpoint-coordinator.js';
import type { CheckpointStorage, CommitRecord, CompletedMarker } from '../../src/coordinator/index.js';
import type { JobState, WorkerSession } from '../../src/coordinator/job-state.js';
import { buildJob, defineJob } from '../../src/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { createPhysicalPlan } from '../../src/plan/index.js';
import { makeMessage, type Message, type MessageOf } from '../../src/protocol/index.js';
import { FakeClock } from '../harness/fake-clock.js';

/** Settle pending promise callbacks (the fake storage answers at once). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

function harness(
  options: {
    intervalMs?: number;
    timeoutMs?: number;
    minPauseMs?: number;
    tolerableFailures?: number;
    alignment?: 'aligned' | 'unaligned' | 'adaptive';
    alignedTimeoutMs?: number;
    failMarker?: boolean;
    failClaim?: boolean;
    markerWritten?: Promise<void>;
    /** Every worker of the job takes ConvertCheckpoint. @default true */
    convertsInPlace?: boolean;
  } = {},
) {
  const convertsInPlace = options.convertsInPlace ?? true;
  const clock = new FakeClock();
  const posted: Message[] = [];
  const markers: CompletedMarker[] = [];
  const removed: number[] = [];
  const commitRecords: CommitRecord[] = [];
  const failed: string[] = [];
  const cancelled: string[] = [];
  let completeChecks = 0;
  let nextId = 0;
  const storage: CheckpointStorage = {
    claimId: async (_dir, floor) => {
      if (options.failClaim) throw new Error('read-only record');
      nextId = Math.max(nextId, floor) + 1;
      return nextId;
    },
    writeMarker: async (_dir, marker) => {
      if (options.failMarker) throw new Error('ENOSPC');
      await options.markerWritten;
      markers.push(marker);
    },
    retain: async () => undefined,
    removeState: async (_dir, id) => void removed.push(id),
    recordCommits: async (_dir, record) => void commitRecords.push(record),
  };
  const { log, lines } = memoryLogger();
  const plan = createPhysicalPlan(
    buildJob(
      defineJob(
        { name: 'ck', version: '1' },
        (env) =>
          void env
            .fromSequence(1, 10)
            .map((x) => x)
            .collect(),
      ),
      { parallelism: 2 },
    ).spec,
  );
  const session = { id: 'w1', state: 'active' } as WorkerSession;
  const job = {
    id: 'job1',
    name: 'ck',
    plan,
    state: 'RUNNING',
    checkpoint: {
      checkpointDir: '/ckpt',
      intervalMs: options.intervalMs ?? 1_000,
      timeoutMs: options.timeoutMs ?? 0,
      minPauseMs: options.minPauseMs ?? 0,
      tolerableFailures: options.tolerableFailures ?? -1,
      alignment: options.alignment ?? 'aligned',
      alignedTimeoutMs: options.alignedTimeoutMs ?? 0,
      checkpointsRetained: 1,
      stateBackendUri: '',
    },
    subtasks: plan.subtasks.map((s) => ({
      taskId: s.taskId,
      index: s.index,
      session,
      slot: '',
      attempt: 0,
      finished: false,
      recordsIn: 0,
      recordsOut: 0,
    })),
  } as unknown as JobState;
  const metrics = new ClinkMetrics();
  const cc = new CheckpointCoordinator(
    job,
    {
      post: (m) => void posted.push(m),
      failed: (reason, fatal) => void failed.push(`${reason}${fatal ? ' (fatal)' : ''}`),
      maybeComplete: () => void completeChecks++,
      cancel: (reason) => void cancelled.push(reason),
      convertsInPlace: () => convertsInPlace,
    },
    { clock, storage, log, metrics },
  );
  const advance = (ms: number): void => clock.advance(ms);
  const ack = (id: number, ok = true, which = job.subtasks, commits = false, inflightBytes = 0): void => {
    for (const t of which) {
      const m = {
        type: 'SubtaskCheckpointed',
        jobId: job.id,
        checkpointId: id,
        taskId: t.taskId,
        subtaskIndex: t.index,
        ok,
        error: ok ? '' : 'disk full',
        stateBytes: 10,
        alignmentMs: 3,
        stateSha256: 'ab',
        commits,
        unaligned: inflightBytes > 0,
        inflightBytes,
        startDelayMs: 1,
      } as MessageOf<'SubtaskCheckpointed'>;
      cc.onAck(m);
    }
  };
  const types = (): string[] => posted.map((m) => m.type);
  /** `ms` pass, the watchdog ticks, and what the tick started settles. */
  const tickAfter = async (ms: number): Promise<void> => {
    advance(ms);
    cc.tick();
    await settle();
  };
  /** clink_checkpoints_aborted_total by reason. */
  const aborted = async (): Promise<Record<string, number>> =>
    Object.fromEntries((await metrics.checkpointsAborted.get()).values.map((v) => [String(v.labels.reason), v.value]));
  return {
    cc,
    job,
    posted,
    types,
    markers,
    removed,
    commitRecords,
    failed,
    cancelled,
    advance,
    tickAfter,
    ack,
    lines,
    aborted,
    completeChecks: () => completeChecks,
    /** The checkpoint in flight (a call: a read would narrow across the awaits between). */
    inFlightId: (): number | undefined => cc.inFlight?.id,
  };
}

describe('the checkpoint coordinator', () => {
  test('a checkpoint starts once its interval has passed, completes with every ack, writes its marker, then commits', async () => {
    const h = harness();
    h.cc.tick();
    await settle();
    assert.deepEqual(h.types(), [], 'not before the interval');
    await h.tickAfter(1_000);
    assert.deepEqual(h.types(), ['TriggerCheckpoint']);
    assert.equal(h.cc.inFlight?.id, 1);
    h.ack(1, true, h.job.subtasks.slice(0, 1));
    await settle();
    assert.equal(h.markers.length, 0, 'not while an ack is missing');
    h.ack(1, true, h.job.subtasks.slice(1));
    await settle();
    assert.equal(h.markers.length, 1);
    assert.deepEqual(
      h.markers[0]!.subtasks,
      h.job.subtasks.map((t) => `${t.taskId}#${t.index}`),
    );
    assert.equal(h.markers[0]!.stateBytes, 10 * h.job.subtasks.length);
    assert.deepEqual(h.types(), ['TriggerCheckpoint', 'CommitCheckpoint']);
    assert.equal(h.cc.inFlight, undefined);
    assert.deepEqual(
      h.cc.history.recent.map((c) => [c.checkpointId, c.kind]),
      [[1, 'periodic']],
    );
  });

  test("while a completed checkpoint's marker is written, a restart forgetting it still finds it in markerWrite and waits for it", async () => {
    let written!: () => void;
    const h = harness({ markerWritten: new Promise<void>((r) => (written = r)) });
    await h.tickAfter(1_000);
    h.ack(1);
    await settle();
    assert.ok(h.cc.markerWritten(), 'the marker write is on the job');
    h.cc.forget('worker lost: w1 (connection closed)');
    let restoreRead = false;
    const restart = h.cc.markerWritten()!.then(() => (restoreRead = true));
    await settle();
    assert.equal(restoreRead, false, 'the restart waits');
    written();
    await restart;
    assert.equal(h.markers.length, 1, 'the marker is there when the restart reads its restore point');
    assert.deepEqual(
      h.types(),
      ['TriggerCheckpoint', 'CommitCheckpoint'],
      'its commit still goes out: the restore starts from it',
    );
    assert.equal(h.cc.markerWritten(), undefined);
  });

  test('the marker names the subtasks that prepared commits; their confirmations write COMMITTED once all are in, and a clean end confirms too', async () => {
    const h = harness();
    const [a, b] = h.job.subtasks.map((t) => `${t.taskId}#${t.index}`) as [string, string];
    await h.tickAfter(1_000);
    h.ack(1, true, h.job.subtasks, true);
    await settle();
    assert.deepEqual(h.markers[0]!.committers, [a, b].sort());
    assert.deepEqual(h.cc.commits.owedCheckpoints, [1], 'owed until confirmed');
    const confirm = (id: number, subtasks: string[]): void =>
      h.cc.commits.confirmed({ type: 'CheckpointCommitted', jobId: h.job.id, checkpointId: id, subtasks, error: '' });
    confirm(1, [a]);
    await settle();
    assert.equal(h.commitRecords.length, 0, 'one of two: nothing recorded');
    confirm(1, [b]);
    await settle();
    assert.deepEqual(
      h.commitRecords.map((r) => r.checkpointId),
      [1],
    );
    await h.tickAfter(1_000);
    h.ack(2, true, h.job.subtasks, true);
    await settle();
    h.cc.commits.ended(a);
    h.cc.commits.ended(b);
    await settle();
    assert.deepEqual(
      h.commitRecords.map((r) => r.checkpointId),
      [1, 2],
      'subtasks that ended cleanly committed all they prepared',
    );
    // A checkpoint without sinks that prepared anything is confirmed at once.
    await h.tickAfter(1_000);
    h.ack(3);
    await settle();
    assert.equal(h.cc.commits.confirmedThrough, 3);
    assert.equal(h.markers[2]!.committers, undefined);
  });

  test('a failed ack aborts the checkpoint; the late acks of it are dropped; the next one numbers above it', async () => {
    const h = harness();
    await h.tickAfter(1_000);
    h.ack(1, false, h.job.subtasks.slice(0, 1));
    assert.deepEqual(h.types(), ['TriggerCheckpoint', 'AbortCheckpoint']);
    await settle();
    assert.deepEqual(h.removed, [1], 'its state is removed');
    const { at: _at, ...failure } = h.cc.history.lastAborted!;
    assert.deepEqual(failure, {
      checkpointId: 1,
      reason: 'declined',
      detail: `subtask ${h.job.subtasks[0]!.taskId}#0 could not snapshot: disk full`,
    });
    assert.deepEqual(await h.aborted(), { expired: 0, declined: 1, finalize_failed: 0, switched_to_unaligned: 0 });
    h.ack(1, true);
    await settle();
    assert.equal(h.markers.length, 0, 'a late ack of an aborted checkpoint completes nothing');
    await h.tickAfter(1_000);
    assert.equal(h.cc.inFlight?.id, 2);
  });

  test('a checkpoint not complete within max(10 s, 10 intervals) is aborted on the tick after', async () => {
    const h = harness({ intervalMs: 2_000 });
    await h.tickAfter(2_000);
    h.advance(20_000);
    h.cc.tick();
    assert.equal(h.cc.inFlight?.id, 1, 'at exactly the timeout it still waits');
    h.advance(1);
    h.cc.tick();
    assert.equal(h.cc.inFlight, undefined);
    // It names the subtasks it waited for.
    assert.ok(
      h
        .lines()
        .some((l) =>
          /^checkpoint 1 of job job1 aborted: not complete within 20000 ms \(no ack from \S+#\d/.test(String(l.msg)),
        ),
      JSON.stringify(h.lines().map((l) => l.msg)),
    );
    assert.equal(h.cc.history.lastAborted?.reason, 'expired');
    assert.deepEqual(await h.aborted(), { expired: 1, declined: 0, finalize_failed: 0, switched_to_unaligned: 0 });
  });

  test('adaptive: a periodic checkpoint starts aligned; past the aligned timeout its barriers are converted in place, once, and it keeps its id', async () => {
    const h = harness({ intervalMs: 1_000, alignment: 'adaptive', alignedTimeoutMs: 500, tolerableFailures: 0 });
    await h.tickAfter(1_000);
    assert.deepEqual(h.types(), ['TriggerCheckpoint']);
    assert.equal((h.posted[0] as MessageOf<'TriggerCheckpoint'>).unaligned, false);
    await h.tickAfter(500);
    assert.deepEqual(h.types(), ['TriggerCheckpoint'], 'at exactly the aligned timeout it still waits');
    await h.tickAfter(1);
    assert.deepEqual(h.types(), ['TriggerCheckpoint', 'ConvertCheckpoint']);
    assert.deepEqual(h.posted[1], makeMessage('ConvertCheckpoint', { jobId: h.job.id, checkpointId: 1 }));
    assert.equal(h.inFlightId(), 1, 'the same checkpoint goes on, unaligned');
    assert.equal(h.cc.inFlight?.unaligned, true);
    await h.tickAfter(1_000);
    assert.deepEqual(
      h.types(),
      ['TriggerCheckpoint', 'ConvertCheckpoint'],
      'converted once; nothing else begins meanwhile',
    );
    h.ack(1, true, h.job.subtasks, false, 2_000);
    await settle();
    assert.deepEqual(h.types().at(-1), 'CommitCheckpoint');
    assert.equal(h.cc.history.recent.at(-1)?.alignment, 'unaligned');
    await h.tickAfter(1_000);
    assert.equal((h.posted.at(-1) as MessageOf<'TriggerCheckpoint'>).unaligned, false, 'the next starts aligned again');
    assert.deepEqual(await h.aborted(), { expired: 0, declined: 0, finalize_failed: 0, switched_to_unaligned: 0 });
    // Its timeout still counts from its trigger.
    await h.tickAfter(600);
    assert.equal(h.types().at(-1), 'ConvertCheckpoint');
    await h.tickAfter(10_000);
    assert.equal(h.cc.history.lastAborted?.reason, 'expired');
  });

  test('adaptive, with a worker too old to convert in place: past the aligned timeout it is taken again unaligned at once, and that is no failure', async () => {
    const h = harness({
      intervalMs: 1_000,
      alignment: 'adaptive',
      alignedTimeoutMs: 500,
      tolerableFailures: 0,
      convertsInPlace: false,
    });
    const triggers = (): MessageOf<'TriggerCheckpoint'>[] =>
      h.posted.filter((m): m is MessageOf<'TriggerCheckpoint'> => m.type === 'TriggerCheckpoint');
    await h.tickAfter(1_000);
    assert.deepEqual(
      triggers().map((m) => [m.checkpointId, m.unaligned]),
      [[1, false]],
    );
    await h.tickAfter(500);
    assert.equal(h.inFlightId(), 1, 'at exactly the aligned timeout it still waits');
    await h.tickAfter(1);
    assert.deepEqual(
      triggers().map((m) => [m.checkpointId, m.unaligned]),
      [
        [1, false],
        [2, true],
      ],
      'taken again unaligned on the same tick, before its interval',
    );
    assert.ok(h.posted.some((m) => m.type === 'AbortCheckpoint' && m.checkpointId === 1));
    assert.equal(h.cc.history.lastAborted?.reason, 'switched_to_unaligned');
    assert.deepEqual(h.failed, [], 'not counted against --tolerable-failed-checkpoints 0');
    await h.tickAfter(10_000);
    assert.equal(h.inFlightId(), 2, 'an unaligned one is never switched; only its timeout ends it');
    h.ack(2);
    await settle();
    await h.tickAfter(1_000);
    assert.deepEqual(triggers().at(-1)!.unaligned, false, 'the next starts aligned again');
    assert.deepEqual(await h.aborted(), { expired: 0, declined: 0, finalize_failed: 0, switched_to_unaligned: 1 });

    // Without a timeout, adaptive (and unaligned) checkpoints are unaligned from the start, as Flink's.
    const u = harness({ intervalMs: 1_000, alignment: 'adaptive' });
    await u.tickAfter(1_000);
    assert.equal((u.posted.at(-1) as MessageOf<'TriggerCheckpoint'>).unaligned, true);
  });

  test('periodic checkpoints are an interval apart, trigger to trigger, as in Flink: a slow one is followed at once', async () => {
    const h = harness({ intervalMs: 1_000 });
    await h.tickAfter(1_000);
    assert.equal(h.inFlightId(), 1);
    await h.tickAfter(600);
    h.ack(1);
    await settle();
    await h.tickAfter(399);
    assert.equal(h.inFlightId(), undefined, '999 ms after the last trigger, none yet');
    await h.tickAfter(1);
    assert.equal(h.inFlightId(), 2, 'an interval after the last trigger, not after its end');
    await h.tickAfter(1_500);
    h.ack(2);
    await settle();
    await h.tickAfter(0);
    assert.equal(h.inFlightId(), 3, 'one that took longer than the interval is followed at once');
  });

  test('the minimum pause spaces a checkpoint from the end of the last, whatever the interval', async () => {
    const h = harness({ intervalMs: 1_000, minPauseMs: 800 });
    await h.tickAfter(1_000);
    await h.tickAfter(600);
    h.ack(1);
    await settle();
    await h.tickAfter(400);
    assert.equal(h.inFlightId(), undefined, 'the interval has passed, the pause has not');
    await h.tickAfter(399);
    assert.equal(h.inFlightId(), undefined);
    await h.tickAfter(1);
    assert.equal(h.inFlightId(), 2, '800 ms after the last ended');
  });

  test('the checkpoint timeout a job sets replaces the default', async () => {
    const h = harness({ intervalMs: 2_000, timeoutMs: 3_000 });
    await h.tickAfter(2_000);
    await h.tickAfter(3_000);
    assert.equal(h.inFlightId(), 1);
    await h.tickAfter(1);
    assert.equal(h.inFlightId(), undefined);
    assert.ok(h.lines().some((l) => String(l.msg).includes('not complete within 3000 ms')));
  });

  test('a savepoint of a job without periodic checkpoints times out at the timeout it sets (Flink: 10 min without one)', async () => {
    const h = harness({ intervalMs: 0, timeoutMs: 5_000 });
    let result: { ok: boolean; message: string } | undefined;
    void h.cc.savepoint('/sp', false).then((r) => (result = r));
    await settle();
    assert.equal(h.inFlightId(), 1);
    await h.tickAfter(5_001);
    assert.equal(result?.ok, false);
    assert.match(result!.message, /not complete within 5000 ms/);
    assert.deepEqual(h.failed, [], 'a savepoint that failed does not count against the job');
  });

  test('more consecutive failed checkpoints than the job tolerates restart it; a completed one resets the count', async () => {
    const h = harness({ intervalMs: 1_000, timeoutMs: 2_000, tolerableFailures: 1 });
    await h.tickAfter(1_000);
    await h.tickAfter(2_001); // 1 expires: tolerated
    assert.deepEqual(h.failed, []);
    await h.tickAfter(0);
    assert.equal(h.inFlightId(), 2);
    h.ack(2);
    await settle();
    await h.tickAfter(1_000);
    assert.equal(h.inFlightId(), 3);
    await h.tickAfter(2_001); // 3 expires: the count began again at 2's completion
    assert.deepEqual(h.failed, []);
    await h.tickAfter(0);
    h.ack(4, false);
    await settle();
    assert.equal(h.failed.length, 1, 'the second in a row is one more than tolerated');
    assert.match(
      h.failed[0]!,
      /^2 consecutive checkpoints failed, more than the 1 it tolerates \(--tolerable-failed-checkpoints\); the last: subtask \S+ could not snapshot: disk full$/,
    );
  });

  test('a marker that cannot be written aborts the checkpoint instead of committing it', async () => {
    const h = harness({ failMarker: true });
    await h.tickAfter(1_000);
    h.ack(1);
    await settle();
    assert.deepEqual(h.types(), ['TriggerCheckpoint', 'AbortCheckpoint']);
    assert.ok(h.lines().some((l) => String(l.msg).includes('its COMPLETED marker could not be written: ENOSPC')));
    assert.equal(h.cc.history.lastAborted?.reason, 'finalize_failed');
    assert.deepEqual(await h.aborted(), { expired: 0, declined: 0, finalize_failed: 1, switched_to_unaligned: 0 });
  });

  test('a savepoint waits for the checkpoint in flight (an event, not a poll), then runs; with cancel the job is cancelled after', async () => {
    const h = harness();
    await h.tickAfter(1_000);
    let result: { ok: boolean; message: string } | undefined;
    void h.cc.savepoint('/sp', true).then((r) => (result = r));
    await settle();
    assert.deepEqual(h.types(), ['TriggerCheckpoint'], 'it waits');
    h.ack(1);
    await settle();
    assert.deepEqual(h.types(), ['TriggerCheckpoint', 'CommitCheckpoint', 'TriggerCheckpoint']);
    assert.equal((h.posted[2] as MessageOf<'TriggerCheckpoint'>).savepointDir, '/sp');
    h.ack(2);
    await settle();
    assert.deepEqual(result, { ok: true, message: 'savepoint 2 of job job1 written to /sp', path: '/sp' });
    assert.deepEqual(h.cancelled, ['cancelled after savepoint 2']);
  });

  test('a savepoint behind a checkpoint that never ends is refused as busy after its wait; a restart fails a pending savepoint with its cause', async () => {
    const h = harness({ intervalMs: 100_000 });
    await h.tickAfter(100_000);
    let busy: { ok: boolean; message: string } | undefined;
    void h.cc.savepoint('/sp', false).then((r) => (busy = r));
    await settle();
    h.advance(SAVEPOINT_WAIT_FOR_IDLE_MS);
    await settle();
    assert.deepEqual(busy, { ok: false, message: 'job job1 has a checkpoint in progress; try again', path: '' });
    h.ack(1);
    await settle();
    let lost: { ok: boolean; message: string } | undefined;
    void h.cc.savepoint('/sp', false).then((r) => (lost = r));
    await settle();
    h.cc.forget('worker lost: w1 (heartbeat timeout)');
    await settle();
    assert.deepEqual(lost, {
      ok: false,
      message: 'savepoint 2 of job job1 failed: worker lost: w1 (heartbeat timeout)',
      path: '',
    });
  });

  test('the final checkpoint starts once every source asked for it; its failure fails the job', async () => {
    const h = harness();
    const sources = h.job.subtasks.filter((t) => h.job.plan.tasks.find((x) => x.id === t.taskId)!.inputs.length === 0);
    h.cc.onFinalRequested(sources[0]!.taskId, sources[0]!.index);
    await settle();
    assert.deepEqual(h.types(), [], 'one source of two has ended');
    h.cc.onFinalRequested(sources[1]!.taskId, sources[1]!.index);
    await settle();
    assert.deepEqual(h.types(), ['FinalCheckpointAssigned']);
    assert.equal(h.cc.inFlight?.final, true);
    h.advance(1_000);
    h.cc.tick();
    assert.deepEqual(h.types(), ['FinalCheckpointAssigned'], 'no periodic checkpoint once the sources have ended');
    h.ack(1, false, h.job.subtasks.slice(0, 1));
    assert.deepEqual(h.failed, [
      'its final checkpoint failed: subtask ' + `${h.job.subtasks[0]!.taskId}#0` + ' could not snapshot: disk full',
    ]);
  });

  test('unaligned: once the sources have ended, periodic checkpoints go on until one finds nothing in flight; then the final one begins', async () => {
    for (const alignment of ['unaligned', 'adaptive'] as const) {
      const h = harness({
        intervalMs: 1_000,
        alignment,
        ...(alignment === 'adaptive' ? { alignedTimeoutMs: 500 } : {}),
      });
      for (const t of h.job.subtasks) h.cc.onFinalRequested(t.taskId, t.index);
      await settle();
      assert.deepEqual(
        h.types(),
        [],
        `${alignment}: no final checkpoint behind a backlog that may take longer than its timeout`,
      );
      await h.tickAfter(1_000);
      assert.deepEqual(h.types(), ['TriggerCheckpoint'], `${alignment}: periodic checkpoints go on`);
      h.ack(1, true, h.job.subtasks, false, 4_000);
      await settle();
      assert.deepEqual(
        h.types(),
        ['TriggerCheckpoint', 'CommitCheckpoint'],
        `${alignment}: records were still in flight`,
      );
      await h.tickAfter(1_000);
      h.ack(2);
      await settle();
      assert.deepEqual(h.types().slice(-2), ['CommitCheckpoint', 'FinalCheckpointAssigned'], `${alignment}: drained`);
      await h.tickAfter(1_000);
      assert.equal(h.types().at(-1), 'FinalCheckpointAssigned', `${alignment}: no periodic checkpoint after it`);
    }
    // A periodic checkpoint that fails meanwhile: waiting longer would not help, the final one begins.
    const f = harness({ intervalMs: 1_000, alignment: 'unaligned' });
    for (const t of f.job.subtasks) f.cc.onFinalRequested(t.taskId, t.index);
    await f.tickAfter(1_000);
    f.ack(1, false, f.job.subtasks.slice(0, 1));
    await settle();
    assert.deepEqual(f.types(), ['TriggerCheckpoint', 'AbortCheckpoint', 'FinalCheckpointAssigned']);
    // A periodic checkpoint begun before the sources ended says nothing of what is left after them.
    const b = harness({ intervalMs: 1_000, alignment: 'unaligned' });
    await b.tickAfter(1_000);
    for (const t of b.job.subtasks) b.cc.onFinalRequested(t.taskId, t.index);
    b.ack(1);
    await settle();
    assert.deepEqual(b.types(), ['TriggerCheckpoint', 'CommitCheckpoint']);
  });

  test('an id that cannot be claimed: a periodic checkpoint is skipped until the next interval; a final one fails the job', async () => {
    const h = harness({ failClaim: true });
    await h.tickAfter(1_000);
    assert.equal(h.cc.busy(), false);
    assert.deepEqual(h.types(), []);
    for (const t of h.job.subtasks) h.cc.onFinalRequested(t.taskId, t.index);
    await settle();
    assert.deepEqual(h.failed, ['its final checkpoint failed: no id could be claimed for it: read-only record']);
  });
});
