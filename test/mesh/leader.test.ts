// The mesh leader's decisions in-process (design record 017): a fake clock, fake checkpoint storage and
// a recorder of what it posts to each member. Milliseconds, no processes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointStorage, CompletedMarker } from '../../src/coordinator/index.js';
import { buildJob, defineJob } from '../../src/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { LeaderRun, meshPlacement, type RunOutcome } from '../../src/mesh/index.js';
import { PEER_VERDICT_MS } from '../../src/mesh/leader.js';
import { createPhysicalPlan } from '../../src/plan/index.js';
import { encodeCollected, LOCAL_PROTOCOL, makeMessage, type Message } from '../../src/protocol/index.js';
import { NO_CHECKPOINTS } from '../../src/client/index.js';
import { FakeClock } from '../harness/fake-clock.js';

const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

const MEMBERS = ['10.0.0.1:7000', '10.0.0.2:7000', '10.0.0.3:7000'];

function harness(o: { intervalMs?: number } = {}) {
  const clock = new FakeClock();
  const posts: { member: number; m: Message }[] = [];
  const markers: CompletedMarker[] = [];
  const outcomes: RunOutcome[] = [];
  let nextId = 0;
  const storage: CheckpointStorage = {
    claimId: async (_dir, floor) => (nextId = Math.max(nextId, floor) + 1),
    writeMarker: async (_dir, marker) => void markers.push(marker),
    retain: async () => undefined,
    removeState: async () => undefined,
    recordCommits: async () => undefined,
  };
  const job = defineJob(
    { name: 'm', version: '1' },
    (env) =>
      void env
        .fromSequence(1, 10)
        .keyBy((x) => x % 3)
        .map((x) => x)
        .uid('work')
        .collect(),
  );
  const plan = createPhysicalPlan(buildJob(job, { parallelism: 3 }).spec);
  const placement = meshPlacement(plan, MEMBERS);
  const run = new LeaderRun(
    {
      jobId: 'mesh-m',
      jobName: 'm',
      plan,
      checkpoint: { ...NO_CHECKPOINTS, checkpointDir: '/ckpt', intervalMs: o.intervalMs ?? 0 },
      placement,
      members: MEMBERS,
      restoredFrom: 4,
      oldestProtocol: LOCAL_PROTOCOL.version,
    },
    {
      clock,
      post: (member, m) => void posts.push({ member, m }),
      storage,
      log: memoryLogger().log,
      metrics: new ClinkMetrics(),
      ended: (r) => void outcomes.push(r),
    },
  );
  const ready = (): void => MEMBERS.forEach((_, i) => run.onFrame(i, makeMessage('MeshReady', {})));
  const sent = (type: Message['type']): number[] => posts.filter((p) => p.m.type === type).map((p) => p.member);
  const finish = (
    member: number,
    taskId: string,
    index: number,
    extra: { ok?: boolean; error?: string; collected?: Uint8Array; peerLost?: boolean } = {},
  ): void =>
    run.onFrame(
      member,
      makeMessage('SubtaskFinished', {
        jobId: 'mesh-m',
        taskId,
        subtaskIndex: index,
        ok: extra.ok ?? true,
        error: extra.error ?? '',
        collected: extra.collected ?? new Uint8Array(0),
        peerLost: extra.peerLost ?? false,
      }),
    );
  const ack = (checkpointId: number, taskId: string, index: number): void =>
    run.onFrame(
      0,
      makeMessage('SubtaskCheckpointed', {
        jobId: 'mesh-m',
        checkpointId,
        taskId,
        subtaskIndex: index,
        ok: true,
        error: '',
        stateBytes: 10,
        alignmentMs: 0,
        stateSha256: 'ab',
      }),
    );
  return { clock, posts, markers, outcomes, run, ready, sent, finish, ack, placement, plan };
}

test('the run starts once every member is ready, not before', () => {
  const h = harness();
  h.run.onFrame(0, makeMessage('MeshReady', {}));
  h.run.onFrame(2, makeMessage('MeshReady', {}));
  assert.deepEqual(h.sent('MeshStart'), []);
  h.run.onFrame(1, makeMessage('MeshReady', {}));
  assert.deepEqual(h.sent('MeshStart'), [0, 1, 2]);
  assert.equal(h.run.state, 'RUNNING');
});

test('an epoch: triggered at every member running a subtask, one marker once every subtask acked, then the commit', async () => {
  const h = harness({ intervalMs: 1_000 });
  h.ready();
  h.clock.advance(1_000);
  h.run.tick();
  await settle();
  const trigger = h.posts.filter((p) => p.m.type === 'TriggerCheckpoint');
  assert.deepEqual(
    trigger.map((p) => p.member),
    [0, 1, 2],
  );
  // Ids number above the checkpoint the attempt resumed from.
  assert.equal((trigger[0]!.m as { checkpointId: number }).checkpointId, 5);
  const all = h.placement.flat();
  for (const st of all.slice(0, -1)) h.ack(5, st.taskId, st.index);
  await settle();
  assert.equal(h.markers.length, 0, 'no marker before the last ack');
  h.ack(5, all.at(-1)!.taskId, all.at(-1)!.index);
  await settle();
  assert.equal(h.markers.length, 1);
  assert.deepEqual(h.markers[0]!.subtasks.sort(), all.map((s) => `${s.taskId}#${s.index}`).sort());
  assert.equal(h.markers[0]!.stateDir, '/ckpt/_jobs/mesh-m/chk-5');
  assert.deepEqual(h.sent('CommitCheckpoint'), [0, 1, 2]);
});

test("a subtask's failure ends the run everywhere, naming the subtask and its member", () => {
  const h = harness();
  h.ready();
  const st = h.placement[1]![0]!;
  h.finish(1, st.taskId, st.index, { ok: false, error: 'boom' });
  assert.deepEqual(h.sent('MeshStop'), [0, 1, 2]);
  assert.equal(h.outcomes.length, 1);
  assert.equal(h.outcomes[0]!.ok, false);
  assert.equal(h.outcomes[0]!.reason, `subtask ${st.taskId}#${st.index} failed on member 1 (10.0.0.2:7000): boom`);
});

test("a member's report of a lost link waits a moment for the loss behind it, which is the cause given", () => {
  const h = harness();
  h.ready();
  h.run.onFrame(
    2,
    makeMessage('MeshStop', { ok: false, reason: 'the mesh link between member 2 and member 0 was lost' }),
  );
  assert.equal(h.outcomes.length, 0);
  h.clock.advance(PEER_VERDICT_MS / 2);
  h.run.memberLost(0, 'its control connection closed');
  assert.equal(h.outcomes[0]!.reason, 'member 0 (10.0.0.1:7000) lost (its control connection closed)');
  h.clock.advance(PEER_VERDICT_MS);
  assert.equal(h.outcomes.length, 1, 'ended once');
});

test("a subtask failed by a lost peer waits for the peer's verdict too", () => {
  const h = harness();
  h.ready();
  const st = h.placement[0]![0]!;
  h.finish(0, st.taskId, st.index, { ok: false, error: 'mesh link to 10.0.0.2:7000 closed', peerLost: true });
  assert.equal(h.outcomes.length, 0);
  h.run.memberLost(1, 'no heartbeat for 10000 ms');
  assert.equal(h.outcomes[0]!.reason, 'member 1 (10.0.0.2:7000) lost (no heartbeat for 10000 ms)');
});

test('with no loss behind it, the report itself fails the run after the moment', () => {
  const h = harness();
  h.ready();
  h.run.onFrame(2, makeMessage('MeshStop', { ok: false, reason: 'a link was lost' }));
  h.clock.advance(PEER_VERDICT_MS);
  assert.equal(h.outcomes[0]!.reason, 'member 2 (10.0.0.3:7000) stopped: a link was lost');
});

test('the run finishes when every subtask has, with the final checkpoint complete first; collect() rows merged', async () => {
  const h = harness();
  h.ready();
  const sources = h.plan.tasks.filter((t) => t.inputs.length === 0);
  for (const t of sources)
    for (let i = 0; i < t.parallelism; i++)
      h.run.onFrame(0, makeMessage('RequestFinalCheckpoint', { jobId: 'mesh-m', taskId: t.id, subtaskIndex: i }));
  await settle();
  assert.deepEqual(h.sent('FinalCheckpointAssigned'), [0, 1, 2]);
  const all = h.placement.flatMap((sts, member) => sts.map((st) => ({ ...st, member })));
  all.forEach((st, i) => h.finish(st.member, st.taskId, st.index, { collected: encodeCollected({ default: [i] }) }));
  assert.equal(h.outcomes.length, 0, 'the final checkpoint is still pending');
  for (const st of all) h.ack(5, st.taskId, st.index);
  await settle();
  assert.equal(h.outcomes.length, 1);
  assert.equal(h.outcomes[0]!.ok, true);
  assert.equal(h.outcomes[0]!.lastCheckpointId, 5);
  assert.deepEqual(
    [...h.outcomes[0]!.collected.default!].sort(),
    all.map((_, i) => i),
  );
  assert.deepEqual(h.sent('MeshStop'), [0, 1, 2]);
});
