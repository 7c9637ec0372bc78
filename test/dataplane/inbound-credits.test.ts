// A channel's receiver gives credits back in grants of half its credits, and the sender is never left
// without credit while nothing waits at the receiver (the receiver could not return any).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { creditFrame, InboundChannel } from '../../src/dataplane/inbound.js';
import { RemoteChannel, type ChannelEvents } from '../../src/dataplane/remote-channel.js';
import { decodeMessage, encodeRecordBatch, makeMessage } from '../../src/protocol/index.js';
import { BARRIER, BATCH, InputQueue, type StreamElement } from '../../src/runtime/index.js';
import { RecordWriter } from '../../src/runtime/writer.js';

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

test('a grant carries the batch size the receiving task asks for (buffer debloating), and a sender starts its batches at it', () => {
  const queue = new InputQueue(5);
  const grants: [number, number][] = [];
  const channel = new InboundChannel(queue, 0, labels, (n, limit) => grants.push([n, limit]), 2);
  queue.batchLimit = 25;
  channel.take(batch, 10);
  takeOne(queue);
  assert.deepEqual(grants, [
    [2, 0],
    [1, 25],
  ]);

  // The frame as the sender reads it, applied by its channel.
  let events: ChannelEvents | undefined;
  const remote = new RemoteChannel(
    (ev) => {
      events = ev;
      return { write: () => undefined, end: () => undefined, destroy: () => undefined };
    },
    () => undefined,
  );
  const m = decodeMessage(creditFrame(1, 25).subarray(4));
  assert.ok(m.type === 'DataCredit');
  events!.credit(m.credits, m);
  assert.equal(remote.batchLimit, 25);
  const plain = decodeMessage(creditFrame(1).subarray(4));
  assert.ok(plain.type === 'DataCredit' && plain.batchLimit === 0, 'no limit: the cached grant');

  // A writer fills a batch to the limit its target asked for when the batch began.
  const target = new InputQueue(8);
  target.batchLimit = 25;
  const writer = new RecordWriter(
    [
      {
        kind: 'FORWARD',
        targets: [{ queue: target, channel: 0 }],
        target: { id: 'x', name: 'x' } as never,
        maxParallelism: 128,
      },
    ],
    1_000,
    0,
    1,
  );
  for (let i = 0; i < 60; i++) writer.collect(i, 0);
  const sizes: number[] = [];
  for (let e = target.poll(); e; e = target.poll()) if (e.kind === BATCH) sizes.push(e.values.length);
  assert.deepEqual(sizes, [25, 25], 'two full batches of 25; the last 10 fill on');
});

test('what an unaligned barrier overtook comes beyond the credits, no more, and the credits come out even', () => {
  const r = receiver(2);
  r.channel.take(batch, 10);
  r.channel.take(batch, 10);
  const barrier = makeMessage('DataBarrier', { checkpointId: 7, unaligned: true, overtaken: 2 });
  r.channel.take(barrier, 10);
  r.channel.take(batch, 10);
  r.channel.take(batch, 10);
  assert.throws(() => r.channel.take(batch, 10), /exceeded its 2 credits/, 'only the two it overtook');
  // The sender spent 4 of its 2 credits: it is owed them back as the task takes the 4 batches.
  let sender = 2 - 4;
  const granted = (): number => r.grants.slice(1).reduce((a, b) => a + b, 0);
  for (let e = takeOne(r.queue); e; e = takeOne(r.queue));
  sender += granted();
  assert.equal(sender, 2, 'all its credits again, and no more');
  r.channel.take(batch, 10);
  r.channel.take(batch, 10);
  assert.throws(() => r.channel.take(batch, 10), /exceeded/);

  // Counted in elements: a watermark among the two overtaken leaves room for one batch, and none after.
  const w = receiver(1);
  w.channel.take(batch, 10);
  w.channel.take(makeMessage('DataBarrier', { checkpointId: 8, unaligned: true, overtaken: 2 }), 10);
  w.channel.take(makeMessage('DataWatermark', { timestamp: 5 }), 10);
  w.channel.take(batch, 10);
  assert.throws(() => w.channel.take(batch, 10), /exceeded its 1 credits/);
});

test('a sender out of credit sends an unaligned barrier at once, and what it overtook right behind it', () => {
  const written: string[] = [];
  let events: ChannelEvents | undefined;
  const remote = new RemoteChannel(
    (ev) => {
      events = ev;
      return {
        write: (f) => written.push(decodeMessage(f.subarray(4)).type),
        end: () => undefined,
        destroy: () => undefined,
      };
    },
    () => undefined,
  );
  const records: StreamElement = { kind: BATCH, channel: 0, values: [1], timestamps: [0], onTaken: undefined };
  remote.push(records);
  remote.push(records);
  assert.deepEqual(written, [], 'no credit yet');
  remote.push({ kind: BARRIER, channel: 0, checkpointId: 3, unaligned: true });
  assert.deepEqual(written, ['DataBarrier', 'DataBatch', 'DataBatch']);
  assert.ok(remote.isFull, 'it owes the credits it spent');
  const m = decodeMessage(creditFrame(2).subarray(4));
  assert.ok(m.type === 'DataCredit');
  events!.credit(m.credits, m);
  assert.ok(remote.isFull, 'two back repay the two it spent');
  events!.credit(m.credits, m);
  assert.ok(!remote.isFull);
});

test('converted in place, an aligned barrier waiting for credit goes at once, ahead of what was before it; what came after it waits for credit', () => {
  const written: { type: string; overtaken?: number; unaligned?: boolean }[] = [];
  let events: ChannelEvents | undefined;
  const remote = new RemoteChannel(
    (ev) => {
      events = ev;
      return {
        write: (f) => {
          const m = decodeMessage(f.subarray(4));
          written.push(
            m.type === 'DataBarrier'
              ? { type: m.type, overtaken: m.overtaken, unaligned: m.unaligned }
              : { type: m.type },
          );
        },
        end: () => undefined,
        destroy: () => undefined,
      };
    },
    () => undefined,
  );
  const records = (): StreamElement => ({ kind: BATCH, channel: 0, values: [1], timestamps: [0] });
  remote.push(records());
  remote.push(records());
  remote.push({ kind: BARRIER, channel: 0, checkpointId: 4 });
  remote.push(records());
  remote.overtakeWith(3);
  assert.deepEqual(written, [], 'another checkpoint: nothing moves');
  remote.overtakeWith(4);
  assert.deepEqual(written, [
    { type: 'DataBarrier', overtaken: 2, unaligned: true },
    { type: 'DataBatch' },
    { type: 'DataBatch' },
  ]);
  // The receiver takes exactly those beyond its credits, then refuses more.
  const r = receiver(1);
  r.channel.take(makeMessage('DataBarrier', { checkpointId: 4, unaligned: true, overtaken: 2 }), 10);
  r.channel.take(batch, 10);
  r.channel.take(batch, 10);
  const m = decodeMessage(creditFrame(3).subarray(4));
  assert.ok(m.type === 'DataCredit');
  events!.credit(m.credits, m);
  assert.deepEqual(
    written.at(-1),
    { type: 'DataBatch' },
    'the batch after the barrier, once credit repays what was spent',
  );
  assert.equal(written.length, 4);
});
