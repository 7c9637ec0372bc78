// The hot rescale's decisions in-process: which plans can be cut over, and the steps of a cutover on a
// fake clock with recorded frames and scripted worker answers (what it sends, when it gives up, when
// it falls back to drain and replan). Milliseconds, no processes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CheckpointCoordinator } from '../../src/coordinator/checkpoint-coordinator.js';
import { cutoverTasks, HotCutover, type RescaleTarget } from '../../src/coordinator/hot-rescale.js';
import type { CompletedMarker } from '../../src/coordinator/index.js';
import { takePlan, type JobState, type StagedRescale, type WorkerSession } from '../../src/coordinator/job-state.js';
import { memoryLogger } from '../../src/log/index.js';
import { createPhysicalPlan, type PhysicalPlan } from '../../src/plan/index.js';
import type { Message, MessageOf } from '../../src/protocol/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/sdk/index.js';
import { FakeClock } from '../harness/fake-clock.js';

// source -> keyed map 'm' -> (rebalance) sink 's': three tasks, 'm' in the middle.
const job = defineJob({ name: 'j', version: '1' }, (env: JobEnvironment) => {
  env
    .fromSequence(1, 100)
    .keyBy((x) => x % 7)
    .map((x) => x)
    .uid('m')
    .rebalance()
    .sinkTo('print')
    .uid('s');
});
const plan = (p: number, parallelismOf: Record<string, number> = {}): PhysicalPlan =>
  createPhysicalPlan(buildJob(job, { parallelism: p, parallelismOf }).spec);

describe('which rescales can be done in place', () => {
  test('the tasks that change, and the running ones beside them', () => {
    const t = cutoverTasks(plan(2), plan(2, { m: 3 }));
    assert.notEqual(typeof t, 'string', String(t));
    assert.deepEqual(t, { changed: ['m'], neighbours: [plan(2).tasks[0]!.id, 's'] });
  });

  test('not when every task changes, nor when the chains or edges would', () => {
    assert.equal(cutoverTasks(plan(2), plan(3)), 'every task changes parallelism, so none would keep running');
    const forward = defineJob(
      { name: 'f', version: '1' },
      (env: JobEnvironment) =>
        void env
          .fromSequence(1, 9)
          .map((x) => x)
          .uid('a')
          .filter(() => true)
          .uid('b')
          .disableChaining()
          .print(),
    );
    const f = (o: Record<string, number>): PhysicalPlan =>
      createPhysicalPlan(buildJob(forward, { parallelism: 2, parallelismOf: o }).spec);
    // a -> b is a forward edge at equal parallelism and a rebalance at another: the graph changes.
    assert.equal(cutoverTasks(f({}), f({ b: 3 })), 'the new parallelism changes how its operators chain or connect');
  });
});

/** A job at parallelism 2 on two workers, and a HotCutover whose checkpoints and deploys are scripted. */
function harness(o: { armRefusedBy?: string; rebindRefused?: boolean; checkpointFails?: boolean } = {}) {
  const clock = new FakeClock();
  const now = plan(2);
  const next = plan(2, { m: 3 });
  const w1 = { id: 'w1', state: 'active', dataHost: 'h1' } as WorkerSession;
  const w2 = { id: 'w2', state: 'active', dataHost: 'h2' } as WorkerSession;
  const j = {
    id: 'job1',
    name: 'j',
    plan: now,
    spec: now.spec,
    state: 'RUNNING',
    attempt: 1,
    checkpoint: { checkpointDir: '/ck' },
    rescales: [],
    subtasks: now.subtasks.map((s) => ({
      taskId: s.taskId,
      index: s.index,
      session: s.index === 0 ? w1 : w2,
      slot: '',
      attempt: 1,
      finished: false,
      started: true,
      recordsIn: 0,
      recordsOut: 0,
      listening: [{ inputIndex: 0, upstreamTaskId: 'x', upstreamSubtask: 0, port: s.index === 0 ? 7001 : 7002 }],
    })),
  } as unknown as JobState;
  const posted: { to: string; m: Message }[] = [];
  const replanned: StagedRescale[] = [];
  const deployed: { tasks: string[]; restore: number }[] = [];
  let cutover!: HotCutover;
  const answer = (s: WorkerSession, m: Message): void => {
    const ack = (phase: string, ok = true, message = ''): void =>
      cutover.onAck(j, s, {
        type: 'BeginRescaleAck',
        jobId: j.id,
        rescaleId: (m as MessageOf<'BeginRescale'>).rescaleId,
        ok,
        armedSubtasks: 1,
        message,
        phase,
      } as MessageOf<'BeginRescaleAck'>);
    if (m.type === 'BeginRescale')
      ack('armed', o.armRefusedBy !== s.id, o.armRefusedBy === s.id ? 'subtask m#1 is not running' : '');
    if (m.type === 'CutoverRebind') {
      // The old subtasks of the changed task retire (their SubtaskFinished precedes the ack).
      for (const t of j.subtasks) if (t.retiring && t.session === s) t.finished = true;
      ack('rebound', !o.rebindRefused, o.rebindRefused ? 'subtask s#0 has not reached the gate' : '');
    }
    if (m.type === 'CutoverPeerUpdate') ack('released');
  };
  const checkpoints = {
    checkpointNow: async (what: string, before?: (id: number) => Promise<void>) => {
      try {
        await before?.(7);
      } catch (err) {
        return { ok: false, message: `${what}: ${(err as Error).message}` };
      }
      return o.checkpointFails ? { ok: false, message: 'checkpoint 7 failed' } : { ok: true, checkpointId: 7 };
    },
  } as unknown as CheckpointCoordinator;
  Object.assign(j, { checkpointing: checkpoints });
  const job = j;
  // The job's master as a hot rescale sees it: its record changes through these.
  const target: RescaleTarget = {
    job: j,
    rescale: (staged) => void replanned.push(staged),
    beginCutover: (rescaleId) => (j.cutover = { rescaleId }),
    endCutover: (c) => {
      if (j.cutover === c) j.cutover = undefined;
    },
    adoptCutover: (staged, retired) => {
      takePlan(j, staged);
      j.subtasks = j.subtasks.filter((t) => !retired.includes(t));
    },
    recordRescale: (r) => void j.rescales.push(r),
    deploy: (placement, restore) => {
      const placed = [...placement.values()].flat();
      deployed.push({ tasks: placed.map((p) => `${p.taskId}#${p.index}`), restore: restore!.checkpointId });
      for (const p of placed)
        job.subtasks.push({
          taskId: p.taskId,
          index: p.index,
          session: w1,
          slot: '',
          attempt: job.attempt,
          finished: false,
          recordsIn: 0,
          recordsOut: 0,
          started: true,
          listening: [0, 1].map((u) => ({
            inputIndex: 0,
            upstreamTaskId: now.tasks[0]!.id,
            upstreamSubtask: u,
            port: 7100 + p.index,
          })),
        });
      // The new subtasks report their ports and are told their peers.
      clock.after(3, () => job.cutover?.connected?.());
    },
  };
  const { log } = memoryLogger();
  cutover = new HotCutover({
    clock,
    log,
    post: (s, m) => {
      posted.push({ to: s.id, m });
      clock.after(1, () => answer(s, m));
    },
    place: async (_job, subtasks) => new Map([['w1', subtasks]]),
    newestCheckpoint: async () => ({ checkpointId: 7, stateDir: '/ck/chk-7' }) as CompletedMarker,
    slotSharing: true,
    stepTimeoutMs: 1_000,
  });
  const staged = {
    spec: next.spec,
    plan: next,
    specJson: JSON.stringify(next.spec),
    buildParallelism: 2,
    parallelismOf: { m: 3 },
    changes: ['m 2 -> 3'],
    requestedAt: clock.now(),
    cause: 'test',
  };
  /** Run the cutover, moving the clock until it answers. */
  const run = async () => {
    const p = cutover.run(target, staged, cutoverTasks(now, next) as Exclude<ReturnType<typeof cutoverTasks>, string>);
    let result: Awaited<typeof p> | undefined;
    void p.then((r) => (result = r));
    for (let i = 0; i < 2_000 && !result; i++) {
      clock.advance(1);
      for (let k = 0; k < 5; k++) await Promise.resolve();
    }
    assert.ok(result, 'the cutover answered');
    return result;
  };
  return { j, posted, replanned, deployed, run, types: () => posted.map((p) => `${p.m.type}>${p.to}`) };
}

describe('a hot cutover, step by step', () => {
  test('arms every worker of the tasks taking part, rebinds, deploys only the new subtasks from the cutover checkpoint, then releases', async () => {
    const h = harness();
    const r = await h.run();
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.deepEqual(h.types(), [
      'BeginRescale>w1',
      'BeginRescale>w2',
      'CutoverRebind>w1',
      'CutoverRebind>w2',
      'CutoverPeerUpdate>w1',
      'CutoverPeerUpdate>w2',
    ]);
    assert.equal((h.posted[0]!.m as MessageOf<'BeginRescale'>).cutoverCheckpointId, 7);
    assert.deepEqual(h.deployed, [{ tasks: ['m#0', 'm#1', 'm#2'], restore: 7 }]);
    // The sources are told where the three new subtasks listen; the sinks need no peers.
    const update = h.posted.find((p) => p.m.type === 'CutoverPeerUpdate' && p.to === 'w1')!
      .m as MessageOf<'CutoverPeerUpdate'>;
    const source = update.subtasks.find((s) => s.peers.length > 0)!;
    assert.deepEqual(
      source.peers.map((p) => `${p.downstreamTaskId}#${p.downstreamSubtask}:${p.port}`),
      ['m#0:7100', 'm#1:7101', 'm#2:7102'],
    );
    assert.equal(h.j.plan.tasks.find((t) => t.id === 'm')!.parallelism, 3);
    assert.equal(h.j.subtasks.filter((t) => t.taskId === 'm').length, 3, 'the old subtasks left the job');
    assert.deepEqual(
      h.j.rescales.map((x) => [x.mode, x.restoredFrom]),
      [['hot-cutover', 7]],
    );
    assert.equal(h.j.cutover, undefined);
    assert.deepEqual(h.replanned, []);
  });

  test('a worker that cannot arm gives the rescale up before its checkpoint: the others are let go, nothing replaced', async () => {
    const h = harness({ armRefusedBy: 'w2' });
    const r = await h.run();
    assert.deepEqual(r, {
      ok: false,
      checkpointId: 0,
      message: 'the rescale of job job1: worker w2: subtask m#1 is not running',
    });
    assert.deepEqual(h.types(), ['BeginRescale>w1', 'BeginRescale>w2', 'CutoverPeerUpdate>w1', 'CutoverPeerUpdate>w2']);
    assert.ok(
      h.posted.slice(2).every((p) => (p.m as MessageOf<'CutoverPeerUpdate'>).subtasks.length === 0),
      'an empty update only lets them go on',
    );
    assert.equal(h.j.plan.tasks.find((t) => t.id === 'm')!.parallelism, 2);
    assert.deepEqual([h.replanned.length, h.deployed.length, h.j.cutover], [0, 0, undefined]);
  });

  test('a failure after the cutover checkpoint drains and replans from it', async () => {
    const h = harness({ rebindRefused: true });
    const r = await h.run();
    assert.deepEqual(r, { ok: false, checkpointId: 7, message: 'worker w1: subtask s#0 has not reached the gate' });
    assert.deepEqual(
      h.replanned.map((s) => [s.checkpointId, s.changes]),
      [[7, ['m 2 -> 3']]],
    );
    assert.deepEqual(h.deployed, []);
  });

  test('a cutover checkpoint that fails gives the rescale up with the job untouched', async () => {
    const h = harness({ checkpointFails: true });
    const r = await h.run();
    assert.deepEqual(r, { ok: false, checkpointId: 0, message: 'checkpoint 7 failed' });
    assert.deepEqual(h.types().slice(2), ['CutoverPeerUpdate>w1', 'CutoverPeerUpdate>w2']);
    assert.deepEqual(h.replanned, []);
  });
});
