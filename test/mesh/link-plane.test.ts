// The LinkPlane over one real TCP link in one process: several channels share the link, each with its
// own credits (a full channel does not stop another); an unknown subtask is refused with the reason;
// the link's loss fails every channel over it that has not ended.
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { elementFrame, LinkPlane, linkFrameHeader } from '../../src/dataplane/index.js';
import { encodeFrame, makeMessage } from '../../src/protocol/index.js';
import { FrameConnection } from '../../src/net/index.js';
import { BATCH, END, InputQueue, type StreamElement } from '../../src/runtime/index.js';
import { waitFor } from '../helpers.js';

/** Two LinkPlanes joined by one link: `a` at port 1, `b` at port 2 (addresses only name the link). */
async function pair(credits = 2): Promise<{ a: LinkPlane; b: LinkPlane; close: () => void }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const dialled = connect((server.address() as { port: number }).port, '127.0.0.1');
  await new Promise((r) => dialled.once('connect', r));
  const socket = await accepted;
  server.close();
  const a = new LinkPlane({
    links: new Map([['h:2', new FrameConnection(dialled, { role: 'test' })]]),
    port: 1,
    credits,
  });
  const b = new LinkPlane({
    links: new Map([['h:1', new FrameConnection(socket, { role: 'test' })]]),
    port: 2,
    credits,
  });
  return { a, b, close: () => (a.close(), b.close()) };
}

const hello = (task: string, upstreamSubtask = 0) => ({
  jobId: 'j',
  attempt: 0,
  edgeIndex: 0,
  upstreamSubtask,
  downstreamTaskId: task,
  downstreamSubtask: 0,
  upstreamTaskId: 'up',
  mac: '',
});
const batch = (n: number): StreamElement => ({ kind: BATCH, channel: 0, values: [n], timestamps: [0] });

/** Register `task`#0 at `plane` with one input channel per upstream subtask; returns its queue. */
function input(plane: LinkPlane, task: string): InputQueue {
  const queue = new InputQueue(64);
  plane.register('j', 0, task, 0, { queue, channelOf: (edge, u) => (edge === 0 ? u : undefined) });
  return queue;
}

/** Take what the queue holds; `process` returns each batch's credit (the task processed it). */
function drain(q: InputQueue, into: StreamElement[], process = true): StreamElement[] {
  for (let e = q.poll(); e; e = q.poll()) {
    if (process && e.kind === BATCH) e.onTaken?.();
    into.push(e);
  }
  return into;
}

test('channels share one link, each with its own credits; elements arrive in order on their channel', async () => {
  const { a, b, close } = await pair(2);
  try {
    const q = input(b, 'down');
    const errors: Error[] = [];
    const c0 = a.open({ host: 'h', port: 2, hello: hello('down', 0), onError: (e) => errors.push(e) });
    const c1 = a.open({ host: 'h', port: 2, hello: hello('down', 1), onError: (e) => errors.push(e) });
    await waitFor('both channels granted credit', () => !c0.isFull && !c1.isFull);
    // c0 spends its two credits and one more waits; c1 is not held back by it.
    for (let i = 0; i < 3; i++) c0.push(batch(i));
    assert.equal(c0.isFull, true);
    c1.push(batch(100));
    c1.push({ kind: END, channel: 0 });
    const held: StreamElement[] = [];
    await waitFor("c0's first two batches and c1's batch and end", () => drain(q, held, false).length >= 4);
    assert.deepEqual(held.map((e) => `${e.channel}:${e.kind === BATCH ? 'batch' : 'end'}`).sort(), [
      '0:batch',
      '0:batch',
      '1:batch',
      '1:end',
    ]);
    assert.equal(c0.isFull, true, 'its third batch waits for credit');
    // The task processes c0's batches: their credits go back and the third follows.
    for (const e of held) if (e.kind === BATCH) e.onTaken?.();
    const all = [...held];
    await waitFor("c0's third batch", () => drain(q, all).length >= 5);
    assert.deepEqual(
      all.filter((e) => e.channel === 0 && e.kind === BATCH).map((e) => (e as { values: number[] }).values[0]),
      [0, 1, 2],
    );
    assert.deepEqual(errors, []);
  } finally {
    close();
  }
});

test('a channel to a subtask the receiver does not have is refused with the reason', async () => {
  const { a, close } = await pair();
  try {
    const errors: Error[] = [];
    a.open({ host: 'h', port: 2, hello: hello('nowhere'), onError: (e) => errors.push(e) });
    await waitFor('the refusal', () => errors.length > 0);
    assert.equal(errors[0]!.message, 'data channel to h:2 refused: no subtask nowhere#0 of job j attempt 0 here');
  } finally {
    close();
  }
});

test("the link's loss fails the channels over it; one opened after fails at once; an ended one does not", async () => {
  const { a, b, close } = await pair();
  try {
    input(b, 'down');
    const errors: string[] = [];
    const ended = a.open({
      host: 'h',
      port: 2,
      hello: hello('down', 0),
      onError: (e) => errors.push(`ended: ${e.message}`),
    });
    const live = a.open({
      host: 'h',
      port: 2,
      hello: hello('down', 1),
      onError: (e) => errors.push(`live: ${e.message}`),
    });
    await waitFor('both channels granted credit', () => !ended.isFull && !live.isFull);
    ended.push({ kind: END, channel: 0 });
    b.close();
    await waitFor('the live channel failed', () => errors.length === 1);
    assert.match(errors[0]!, /^live: mesh link to h:2 closed/);
    const late: Error[] = [];
    a.open({ host: 'h', port: 2, hello: hello('down', 0), onError: (e) => late.push(e) });
    await waitFor('the late channel failed', () => late.length === 1);
    assert.match(late[0]!.message, /^mesh link to h:2 closed/);
    assert.equal(errors.length, 1);
  } finally {
    close();
  }
});

test('a LinkFrame written as a header and the frame as it is reads as the codec encodes it', () => {
  const frame = elementFrame(batch(42));
  const payload = frame.subarray(4);
  for (const fromOpener of [true, false]) {
    const written = Buffer.concat([linkFrameHeader(7, fromOpener, payload.length), payload]);
    assert.deepEqual(written, encodeFrame(makeMessage('LinkFrame', { channel: 7, fromOpener, frame: payload })));
  }
});
