// The Kafka source's checkpoint position without a broker: a barrier that comes after a restore but
// before the first read (a slow start) must still carry the restored offsets. Without them a later
// restore sent the subtask back to the earliest offsets, and the exactly-once kill test wrote duplicates.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kafka, ownerOf } from '../../src/connectors/index.js';

test('a checkpoint taken before the first read after a restore keeps the restored offsets', async () => {
  const options = kafka.source!.validate!({ bootstrapServers: '127.0.0.1:1', topic: 'orders' });
  const reader = await kafka.source!.createReader(options, {
    operatorName: 'src',
    subtaskIndex: 0,
    parallelism: 2,
    signal: new AbortController().signal,
  });
  try {
    assert.deepEqual(reader.snapshot!(), { topic: 'orders', offsets: {} }, 'a fresh reader has no position yet');
    // Given every subtask's offsets (as after a rescale), it keeps those of the partitions it owns.
    const owned = [0, 1, 2, 3].filter((p) => ownerOf('orders', p, 2) === 0);
    await reader.restore!({ topic: 'orders', offsets: { 0: '1200', 1: '70', 2: '980', 3: '5' } });
    assert.deepEqual(reader.snapshot!(), {
      topic: 'orders',
      offsets: Object.fromEntries(owned.map((p) => [p, { 0: '1200', 1: '70', 2: '980', 3: '5' }[p]!])),
    });
    assert.equal(owned.length, 2);
  } finally {
    await reader.close?.();
  }
});

test('a rescale gives every new subtask the offsets of all the earlier ones (each reads those it owns)', async () => {
  const options = kafka.source!.validate!({ bootstrapServers: '127.0.0.1:1', topic: 'orders' });
  const divided = await kafka.source!.rescale!(
    [{ topic: 'orders', offsets: { 0: '10', 2: '30' } }, { topic: 'orders', offsets: { 1: '20' } }, undefined],
    2,
    options,
  );
  assert.deepEqual(divided, [
    { topic: 'orders', offsets: { 0: '10', 1: '20', 2: '30' } },
    { topic: 'orders', offsets: { 0: '10', 1: '20', 2: '30' } },
  ]);
});
