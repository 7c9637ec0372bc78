// The collect() sink: what it gathered is checkpointed state, and the size cap stops it as records come in.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isFatal } from '../../src/errors.js';
import type { OperatorContext, RuntimeServices } from '../../src/runtime/operator.js';
import { CollectSinkOperator } from '../../src/runtime/operators/collect.js';

function collectSink(maxBytes?: number): { op: CollectSinkOperator; collected: unknown[] } {
  const collected: unknown[] = [];
  const services: RuntimeServices = {
    collect: (_name, values) => void collected.push(...values),
    stdout: () => undefined,
  };
  const op = new CollectSinkOperator('xs', maxBytes);
  op.setup(
    {
      spec: { name: 'collect xs' },
      subtaskIndex: 0,
      parallelism: 1,
      services,
      signal: new AbortController().signal,
    } as unknown as OperatorContext,
    {
      collect: () => undefined,
      emitWatermark: () => undefined,
      emitStatus: () => undefined,
    },
  );
  return { op, collected };
}

test('collect(): a restore brings back what was gathered up to the checkpoint, and nothing after it', async () => {
  const first = collectSink();
  await first.op.open();
  for (let i = 0; i < 5; i++) first.op.processElement({ i, at: new Date(i) }, 0);
  await first.op.endBatch();
  first.op.processElement({ i: 5, at: new Date(5) }, 0); // in the batch the barrier cuts
  const state = first.op.snapshotState();
  first.op.processElement({ i: 6, at: new Date(6) }, 0); // after the checkpoint: lost with the attempt, replayed by the source
  await first.op.endBatch();

  const second = collectSink();
  await second.op.open();
  second.op.restoreState(state);
  second.op.processElement({ i: 6, at: new Date(6) }, 0);
  await second.op.finish();
  assert.deepEqual(
    second.collected,
    [0, 1, 2, 3, 4, 5, 6].map((i) => ({ i, at: new Date(i) })),
  );
  assert.equal(first.collected.length, 0, 'nothing is handed over before the end of input');
});

test('collect(): past the cap the subtask fails as records come in, deterministically (no restart), naming the fix', async () => {
  const { op } = collectSink(1_000);
  await op.open();
  let failure: unknown;
  for (let batch = 0; batch < 100 && failure === undefined; batch++) {
    for (let i = 0; i < 10; i++) op.processElement({ text: 'x'.repeat(20), batch, i }, 0);
    try {
      await op.endBatch();
    } catch (err) {
      failure = err;
    }
  }
  assert.ok(failure instanceof Error, 'the cap was hit');
  assert.match(
    failure.message,
    /^collect\('xs'\) gathered more than 1000 bytes in one subtask .*write large results to a sink/,
  );
  assert.equal(isFatal(failure), true);
});
