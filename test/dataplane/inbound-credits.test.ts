// A channel's receiver gives credits back in grants of half its credits, and the sender is never left
// without credit while nothing waits at the receiver (the receiver could not return any).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { InboundChannel } from '../../src/dataplane/inbound.js';
import { encodeRecordBatch, makeMessage } from '../../src/protocol/index.js';
import { BATCH, InputQueue, type StreamElement } from '../../src/runtime/index.js';

const labels = { job: 'j', edge: '0', from: 'a#0', to: 'b#0' };
const batch = makeMessage('DataBatch', { batch: encodeRecordBatch([1, 2], [5, 6]) });

/** A receiver with `credits`, and what it granted. */
function receiver(credits: number): { channel: InboundChannel; queue: InputQueue; grants: number[] } {
  const queue = new InputQueue(credits + 1);
  const grants: number[] = [];
  const channel = new InboundChannel(queue, 0, labels, (n) => grants.push(n), credits);
  return { channel, queue, grants };
}

/** Take what the queue holds as a task does: the batch, then its onTaken. */
function takeOne(queue: InputQueue): StreamElement | undefined {
  const e = queue.poll();
  if (e?.kind === BATCH) e.onTaken?.();
  return e;
}

test('credits go back two at a time for a channel of four; one at a time for a channel of one or two', () => {
  const four = receiver(4);
  assert.deepEqual(four.grants, [4], 'the initial grant');
  for (let i = 0; i < 4; i++) four.channel.take(batch, 10);
  assert.throws(() => four.channel.take(batch, 10), /exceeded its 4 credits/);
  takeOne(four.queue);
  assert.deepEqual(four.grants, [4], 'one taken: held back');
  takeOne(four.queue);
  assert.deepEqual(four.grants, [4, 2], 'two taken: granted together');
  takeOne(four.queue);
  takeOne(four.queue);
  assert.deepEqual(four.grants, [4, 2, 2]);

  for (const credits of [1, 2]) {
    const r = receiver(credits);
    r.channel.take(batch, 10);
    takeOne(r.queue);
    assert.deepEqual(r.grants, [credits, 1]);
  }
});

test('a sender out of credit always has batches waiting at the receiver, whose taking gives credit back (any interleaving)', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 9 }), fc.array(fc.boolean(), { maxLength: 200 }), (credits, steps) => {
      const r = receiver(credits);
      let available = 0;
      let granted = 0;
      const seen = (): void => {
        while (granted < r.grants.length) available += r.grants[granted++]!;
      };
      seen();
      let queued = 0;
      for (const send of steps) {
        if (send && available > 0) {
          r.channel.take(batch, 10); // would throw if the sender had more than its credits
          available--;
          queued++;
        } else if (queued > 0) {
          takeOne(r.queue);
          queued--;
          seen();
        }
        // The sender is stuck only if it has no credit and the receiver has nothing to take.
        assert.ok(available > 0 || queued > 0, `stuck with ${credits} credits`);
        assert.ok(available + queued <= credits);
      }
    }),
  );
});
