// The Kafka source's checkpoint position without a broker: a barrier that comes after a restore but
// before the first read (a slow start) must still carry the restored offsets. Without them a later
// restore sent the subtask back to the earliest offsets, and the exactly-once kill test wrote duplicates.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kafka } from '../../src/connectors/index.js';

test('a checkpoint taken before the first read after a restore keeps the restored offsets', async () => {
  const options = kafka.source!.validate!({ bootstrapServers: '127.0.0.1:1', topic: 'orders' });
  const reader = await kafka.source!.createReader(options, { operatorName: 'src', subtaskIndex: 0, parallelism: 2, signal: new AbortController().signal });
  try {
    assert.deepEqual(reader.snapshot!(), { topic: 'orders', offsets: {} }, 'a fresh reader has no position yet');
    await reader.restore!({ topic: 'orders', offsets: { 0: '1200', 2: '980' } });
    assert.deepEqual(reader.snapshot!(), { topic: 'orders', offsets: { 0: '1200', 2: '980' } });
  } finally {
    await reader.close?.();
  }
});
