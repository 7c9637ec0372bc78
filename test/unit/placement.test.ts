import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assignTaskPlacement,
  countChannels,
  NotEnoughSlotsError,
  placementSubtasks,
  type PlacementPlan,
} from '../../src/coordinator/index.js';
import { createPhysicalPlan, slotNeed } from '../../src/plan/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/index.js';

/** A q0-like forward-only pipeline of four tasks (chaining broken so every edge is a channel). */
function q0(env: JobEnvironment): void {
  env
    .fromSequence(1, 100)
    .map((x) => x)
    .startNewChain()
    .filter(() => true)
    .startNewChain()
    .print()
    .disableChaining();
}

const planOf = (build: (env: JobEnvironment) => void, parallelism: number) =>
  createPhysicalPlan(buildJob(defineJob({ name: 'p', version: '1' }, build), { parallelism }).spec);

const workers = (n: number, slots: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `w${i + 1}`, freeSlots: slots }));

/** The old behaviour: first fit, one subtask at a time, in plan (operator-major) order. */
function operatorMajorFirstFit(
  subtasks: { taskId: string; index: number }[],
  ws: { id: string; freeSlots: number }[],
): PlacementPlan {
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
    assert.ok(
      old.socket > 0,
      `operator-major order sent ${old.socket} of ${old.local + old.socket} channels over sockets`,
    );
    assert.deepEqual(old, { local: 12, socket: 24 });
  });

  test('placement is deterministic and spread: each instance to the worker with the most free slots, ties by id, whatever order they come in', () => {
    const plan = planOf(q0, 5);
    const subtasks = plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index }));
    const a = assignTaskPlacement(
      subtasks,
      [
        { id: 'b', freeSlots: 8 },
        { id: 'c', freeSlots: 8 },
        { id: 'a', freeSlots: 8 },
      ],
      24,
    );
    const b = assignTaskPlacement(
      subtasks,
      [
        { id: 'c', freeSlots: 8 },
        { id: 'a', freeSlots: 8 },
        { id: 'b', freeSlots: 8 },
      ],
      24,
    );
    assert.deepEqual([...a].sort(), [...b].sort());
    assert.deepEqual(
      a.get('a')!.map((s) => s.index),
      [0, 0, 0, 0, 3, 3, 3, 3],
    );
    assert.deepEqual(
      a.get('b')!.map((s) => s.index),
      [1, 1, 1, 1, 4, 4, 4, 4],
    );
    assert.deepEqual(
      a.get('c')!.map((s) => s.index),
      [2, 2, 2, 2],
    );
  });

  test('an instance larger than any worker’s free slots is split across what is free', () => {
    const plan = planOf(q0, 1); // one instance of 4 subtasks
    const subtasks = plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index }));
    const placed = assignTaskPlacement(subtasks, workers(2, 3), 6);
    assert.deepEqual(
      [...placed].map(([w, s]) => [w, s.length]),
      [
        ['w1', 3],
        ['w2', 1],
      ],
    );
    assert.deepEqual(countChannels(plan, placed), { local: 2, socket: 1 });
  });

  test('running out of capacity is refused with the numbers, never placed partly', () => {
    const plan = planOf(q0, 3);
    const subtasks = plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index }));
    assert.throws(
      () =>
        assignTaskPlacement(
          subtasks,
          [
            { id: 'w1', freeSlots: 5 },
            { id: 'w2', freeSlots: 6 },
          ],
          16,
        ),
      (e: unknown) =>
        e instanceof NotEnoughSlotsError &&
        e.needed === 12 &&
        e.free === 11 &&
        /the job needs 12, 11 of the cluster's 16 are free/.test(e.message),
    );
  });

  test('a hash edge counts every upstream-downstream pair; a forward edge only i to i', () => {
    const plan = planOf(
      (env) =>
        env
          .fromSequence(1, 9)
          .keyBy((x) => x % 3)
          .count()
          .print(),
      3,
    );
    const placed = assignTaskPlacement(
      plan.subtasks.map((s) => ({ taskId: s.taskId, index: s.index })),
      workers(3, 2),
      6,
    );
    // source i and count i share worker i: of 9 hash channels, 3 are local
    assert.deepEqual(countChannels(plan, placed), { local: 3, socket: 6 });
  });
});

describe('slot sharing', () => {
  const twoTasks = (env: JobEnvironment): void =>
    void env
      .fromSequence(1, 100)
      .keyBy((x) => x % 7)
      .count()
      .print();
  const withSinkGroup = (env: JobEnvironment): void =>
    void env
      .fromSequence(1, 100)
      .keyBy((x) => x % 7)
      .count()
      .print()
      .slotSharingGroup('sinks');

  test('a job needs, per slot sharing group, as many slots as its widest task (as in Flink); off: one per subtask', () => {
    assert.deepEqual(slotNeed(planOf(twoTasks, 8), true), { slots: 8, detail: "slot sharing group 'default': 8" });
    assert.deepEqual(slotNeed(planOf(withSinkGroup, 8), true), {
      slots: 16,
      detail: "slot sharing group 'default': 8, 'sinks': 8",
    });
    assert.deepEqual(slotNeed(planOf(twoTasks, 8), false), {
      slots: 16,
      detail: 'one slot per subtask: --slot-sharing off',
    });
    const mixed = planOf(
      (env) =>
        void env
          .fromElements([1, 2])
          .rebalance()
          .map((x) => x)
          .setParallelism(6)
          .print(),
      2,
    );
    assert.equal(slotNeed(mixed, true).slots, 6, 'the widest task sets the group: parallelism 1 and 6 share 6 slots');
  });

  test("two workers of 4 slots run parallelism 8 (the README's cluster): each slot holds one pipeline instance", () => {
    const plan = planOf(twoTasks, 8);
    const units = placementSubtasks(plan, true);
    const placed = assignTaskPlacement(units, workers(2, 4), 8, slotNeed(plan, true).detail);
    for (const [, sts] of placed) {
      assert.equal(sts.length, 8, 'four instances of two subtasks each');
      assert.equal(new Set(sts.map((s) => s.slot)).size, 4, 'in four slots');
    }
    assert.deepEqual(
      placed
        .get('w1')!
        .filter((s) => s.taskId === plan.tasks[0]!.id)
        .map((s) => s.index),
      [0, 2, 4, 6],
      'spread: alternating workers',
    );
    assert.throws(
      () => assignTaskPlacement(placementSubtasks(plan, false), workers(2, 4), 8, slotNeed(plan, false).detail),
      /^NotEnoughSlotsError: not enough free slots: the job needs 16 \(one slot per subtask: --slot-sharing off\), 8 of the cluster's 8 are free$/,
    );
    const split = planOf(withSinkGroup, 8);
    assert.throws(
      () => assignTaskPlacement(placementSubtasks(split, true), workers(2, 4), 8, slotNeed(split, true).detail),
      (e: unknown) =>
        e instanceof NotEnoughSlotsError &&
        e.message ===
          "not enough free slots: the job needs 16 (slot sharing group 'default': 8, 'sinks': 8), 8 of the cluster's 8 are free",
    );
  });

  test('a slot the job still holds on a worker takes a retried subtask at no cost; a slot never spans workers', () => {
    const plan = planOf(twoTasks, 2);
    const units = placementSubtasks(plan, true, (s) => s.taskId === plan.tasks[1]!.id && s.index === 1);
    const placed = assignTaskPlacement(
      units,
      [
        { id: 'w1', freeSlots: 0, holds: new Set() },
        { id: 'w2', freeSlots: 0, holds: new Set(['default#1']) },
      ],
      4,
    );
    assert.deepEqual([...placed.keys()], ['w2']);
    const big = planOf(twoTasks, 1); // one instance, one shared slot: it cannot be split
    const one = assignTaskPlacement(placementSubtasks(big, true), [{ id: 'w1', freeSlots: 1 }], 1);
    assert.equal(one.get('w1')!.length, 2);
  });
});
