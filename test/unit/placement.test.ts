import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assignTaskPlacement, countChannels, NotEnoughSlotsError, type PlacementPlan } from '../../src/coordinator/index.js';
import { createPhysicalPlan } from '../../src/plan/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/index.js';

/** A q0-like forward-only pipeline of four tasks (chaining broken so every edge is a channel). */
function q0(env: JobEnvironment): void {
  env.fromSequence(1, 100).map((x) => x).startNewChain().filter(() => true).startNewChain().print().disableChaining();
}

const planOf = (build: (env: JobEnvironment) => void, parallelism: number) =>
  createPhysicalPlan(buildJob(defineJob({ name: 'p', version: '1' }, build), { parallelism }).spec);

const workers = (n: number, slots: number) => Array.from({ length: n }, (_, i) => ({ id: `w${i + 1}`, freeSlots: slots }));

/** The old behaviour: first fit, one subtask at a time, in plan (operator-major) order. */
function operatorMajorFirstFit(subtasks: { taskId: string; index: number }[], ws: { id: string; freeSlots: number }[]): PlacementPlan {
  const free = new Map(ws.map((w) => [w.id, w.freeSlots]));
  const plan: PlacementPlan = new Map();
  for (const s of subtasks) {
    const id = [...free].find(([, n]) => n > 0)![0];
    free.set(id, free.get(id)! - 1);
    (plan.get(id) ?? plan.set(id, []).get(id)!).push(s);
  }
  return plan;
}

describe('placement', () => {
  test('each pipeline instance (the subtasks sharing an index) lands whole on one worker', () => {
    const plan = planOf(q0, 12);
    const subtasks = plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index }));
    assert.equal(subtasks.length, 48);
    const placed = assignTaskPlacement(subtasks, workers(3, 16), 48);
    for (let i = 0; i < 12; i++) {
      const holders = [...placed].filter(([, sts]) => sts.some((s) => s.index === i)).map(([w]) => w);
      assert.equal(holders.length, 1, `instance ${i} on ${holders.join(', ')}`);
    }
    assert.deepEqual(countChannels(plan, placed), { local: 36, socket: 0 });
  });

  test('the operator-major first fit it replaces scatters the same pipeline over sockets', () => {
    const plan = planOf(q0, 12);
    const subtasks = plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index }));
    const old = countChannels(plan, operatorMajorFirstFit(subtasks, workers(3, 16)));
    assert.ok(old.socket > 0, `operator-major order sent ${old.socket} of ${old.local + old.socket} channels over sockets`);
    assert.deepEqual(old, { local: 12, socket: 24 });
  });

  test('placement is deterministic: workers are visited in sorted id order, whatever order they come in', () => {
    const plan = planOf(q0, 5);
    const subtasks = plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index }));
    const a = assignTaskPlacement(subtasks, [{ id: 'b', freeSlots: 8 }, { id: 'c', freeSlots: 8 }, { id: 'a', freeSlots: 8 }], 24);
    const b = assignTaskPlacement(subtasks, [{ id: 'c', freeSlots: 8 }, { id: 'a', freeSlots: 8 }, { id: 'b', freeSlots: 8 }], 24);
    assert.deepEqual([...a].sort(), [...b].sort());
    assert.deepEqual(a.get('a')!.map((s) => s.index), [0, 0, 0, 0, 1, 1, 1, 1]);
  });

  test('an instance larger than any worker’s free slots is split across what is free', () => {
    const plan = planOf(q0, 1); // one instance of 4 subtasks
    const subtasks = plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index }));
    const placed = assignTaskPlacement(subtasks, workers(2, 3), 6);
    assert.deepEqual([...placed].map(([w, s]) => [w, s.length]), [['w1', 3], ['w2', 1]]);
    assert.deepEqual(countChannels(plan, placed), { local: 2, socket: 1 });
  });

  test('running out of capacity is refused with the numbers, never placed partly', () => {
    const plan = planOf(q0, 3);
    const subtasks = plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index }));
    assert.throws(
      () => assignTaskPlacement(subtasks, [{ id: 'w1', freeSlots: 5 }, { id: 'w2', freeSlots: 6 }], 16),
      (e: unknown) => e instanceof NotEnoughSlotsError && e.needed === 12 && e.free === 11 && /the job needs 12, 11 of the cluster's 16 are free/.test(e.message),
    );
  });

  test('a hash edge counts every upstream-downstream pair; a forward edge only i to i', () => {
    const plan = planOf((env) => env.fromSequence(1, 9).keyBy((x) => x % 3).count().print(), 3);
    const placed = assignTaskPlacement(plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index })), workers(3, 2), 6);
    // source i and count i share worker i: of 9 hash channels, 3 are local
    assert.deepEqual(countChannels(plan, placed), { local: 3, socket: 6 });
  });
});
