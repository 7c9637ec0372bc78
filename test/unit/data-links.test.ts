// A cluster's data links between two DataServers in one process, over real sockets: every channel from
// one server to the other shares one link (each with its own credits and in order), a sender that stops
// early is forgotten at the receiver (checked on a raw link), a link whose first channel does not prove the attempt's secret is
// closed and counted, a peer that takes no links gets a connection per channel, and the loss of a link
// fails the channels over it while the next channel dials anew.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { DataServer, helloMac, type ChannelOpen } from '../../src/dataplane/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { encodeFrame, encodeMessage, encodeRecordBatch, makeMessage } from '../../src/protocol/index.js';
import { BATCH, END, InputQueue, type StreamElement } from '../../src/runtime/index.js';
import { waitFor } from '../helpers.js';

const SECRET = 'attempt-secret';
const fields = (task: string, upstreamSubtask: number) => ({
  jobId: 'j',
  attempt: 1,
  edgeIndex: 0,
  upstreamSubtask,
  downstreamTaskId: task,
  downstreamSubtask: 0,
  upstreamTaskId: 'up',
});
const hello = (task: string, upstreamSubtask = 0, secret = SECRET) => ({
  ...fields(task, upstreamSubtask),
  mac: helloMac(secret, fields(task, upstreamSubtask)),
});
const batch = (n: number): StreamElement => ({ kind: BATCH, channel: 0, values: [n], timestamps: [0] });

async function gauge(m: ClinkMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = (metric?.values ?? []).find((x) =>
    Object.entries(labels).every(([k, val]) => (x.labels as Record<string, string>)[k] === val),
  );
  return v ? Number(v.value) : 0;
}

/** Take what the queue holds, returning each batch's credit (the task processed it). */
function drain(q: InputQueue, into: StreamElement[]): StreamElement[] {
  for (let e = q.poll(); e; e = q.poll()) {
    if (e.kind === BATCH) e.onTaken?.();
    into.push(e);
  }
  return into;
}

describe('data links between two data servers', () => {
  let a: DataServer;
  let b: DataServer;
  const am = new ClinkMetrics();
  const bm = new ClinkMetrics();
  const queue = new InputQueue(64);
  before(async () => {
    a = await DataServer.start({ host: '127.0.0.1', metrics: am, credits: 2 });
    b = await DataServer.start({ host: '127.0.0.1', metrics: bm, credits: 2 });
    b.register('j', 1, 'down', 0, { queue, secret: SECRET, channelOf: (edge, u) => (edge === 0 ? u : undefined) });
  });
  after(async () => {
    await a.close();
    await b.close();
  });
  const open = (o: Partial<ChannelOpen> & Pick<ChannelOpen, 'hello' | 'onError'>) =>
    a.open({ host: '127.0.0.1', port: b.port, link: true, ...o });

  test('channels to one peer share one link, each with its own credits, in order', async () => {
    const errors: Error[] = [];
    const channels = [0, 1, 2].map((u) => open({ hello: hello('down', u), onError: (e) => errors.push(e) }));
    await waitFor('every channel granted credit', () => channels.every((c) => !c.isFull));
    assert.equal(await gauge(am, 'clink_data_links', { direction: 'out' }), 1, 'one link dialled');
    assert.equal(await gauge(bm, 'clink_data_links', { direction: 'in' }), 1, 'one link accepted');
    // Channel 0 overruns its two credits: its third batch waits while the others go on.
    for (let i = 0; i < 3; i++) channels[0]!.push(batch(i));
    channels[1]!.push(batch(100));
    channels[1]!.push({ kind: END, channel: 0 });
    const got: StreamElement[] = [];
    await waitFor(
      'every batch, in order per channel',
      () => drain(queue, got).filter((e) => e.kind === BATCH).length === 4,
    );
    assert.deepEqual(
      got.filter((e) => e.channel === 0).map((e) => (e as { values: number[] }).values[0]),
      [0, 1, 2],
    );
    assert.deepEqual(
      got.filter((e) => e.channel === 1).map((e) => e.kind),
      [BATCH, END],
    );
    channels[2]!.destroy();
    channels[0]!.push({ kind: END, channel: 0 });
    await waitFor("channel 0's end", () => drain(queue, got).some((e) => e.channel === 0 && e.kind === END));
    assert.deepEqual(errors, []);
    assert.equal(await gauge(am, 'clink_data_links', { direction: 'out' }), 1, 'still the one link');
  });

  test('a channel whose sender stops early is forgotten at the receiver: what follows on it is dropped, the link goes on', async () => {
    const got: StreamElement[] = [];
    drain(queue, got);
    const s = connect(b.port, '127.0.0.1');
    s.on('error', () => undefined);
    const on = (channel: number, m: Parameters<typeof encodeMessage>[0]) =>
      s.write(encodeFrame(makeMessage('LinkFrame', { channel, fromOpener: true, frame: encodeMessage(m) })));
    const records = (n: number) => makeMessage('DataBatch', { batch: encodeRecordBatch([n], [0]) });
    try {
      on(1, makeMessage('DataHello', hello('down', 3)));
      on(1, makeMessage('DataRefused', { reason: 'the sender stopped' }));
      on(1, records(1)); // a stray frame after the stop: dropped
      on(2, makeMessage('DataHello', hello('down', 4)));
      on(2, records(2));
      await waitFor("channel 4's batch", () => drain(queue, got).length === 1);
      assert.deepEqual(
        got.map((e) => [e.channel, (e as { values: number[] }).values[0]]),
        [[4, 2]],
      );
    } finally {
      s.destroy();
    }
  });

  test("a link whose first channel does not prove the attempt's secret is closed and counted", async () => {
    const refusedBefore = await gauge(bm, 'clink_data_connections_refused_total', { reason: 'bad_secret' });
    const closed = await new Promise<boolean>((resolve) => {
      const s = connect(b.port, '127.0.0.1');
      s.on('error', () => undefined);
      s.once('connect', () => {
        const inner = encodeMessage(makeMessage('DataHello', hello('down', 5, 'not the secret')));
        s.write(encodeFrame(makeMessage('LinkFrame', { channel: 1, fromOpener: true, frame: inner })));
      });
      s.once('close', () => resolve(true));
    });
    assert.ok(closed);
    assert.equal(await gauge(bm, 'clink_data_connections_refused_total', { reason: 'bad_secret' }), refusedBefore + 1);
  });

  test('to a peer that takes no links, a connection per channel; a data server that takes none refuses a link', async () => {
    const c = await DataServer.start({ host: '127.0.0.1', transport: 'channel', metrics: new ClinkMetrics() });
    try {
      const q = new InputQueue(8);
      c.register('j', 1, 'down', 0, { queue: q, secret: SECRET, channelOf: (edge, u) => (edge === 0 ? u : undefined) });
      assert.equal(c.takesLinks, false);
      const ch = a.open({
        host: '127.0.0.1',
        port: c.port,
        link: false,
        hello: hello('down', 0),
        onError: (e) => assert.fail(e),
      });
      ch.push(batch(7));
      ch.push({ kind: END, channel: 0 });
      const got: StreamElement[] = [];
      await waitFor('the batch and the end', () => drain(q, got).length === 2);
      assert.equal(await gauge(am, 'clink_data_links', { direction: 'out' }), 1, 'no link dialled to it');
      const errors: Error[] = [];
      a.open({ host: '127.0.0.1', port: c.port, link: true, hello: hello('down', 1), onError: (e) => errors.push(e) });
      await waitFor('the link refused', () => errors.length === 1);
      assert.match(errors[0]!.message, /^data link to 127\.0\.0\.1:\d+ closed/);
    } finally {
      await c.close();
    }
  });

  test("a link's loss fails its open channels; the next channel dials anew", async () => {
    const d = await DataServer.start({ host: '127.0.0.1', metrics: new ClinkMetrics() });
    const q = new InputQueue(8);
    d.register('j', 1, 'down', 0, { queue: q, secret: SECRET, channelOf: (edge, u) => (edge === 0 ? u : undefined) });
    const errors: Error[] = [];
    const live = a.open({
      host: '127.0.0.1',
      port: d.port,
      link: true,
      hello: hello('down', 0),
      onError: (e) => errors.push(e),
    });
    await waitFor('credit', () => !live.isFull);
    const port = d.port;
    await d.close();
    await waitFor('the channel failed', () => errors.length === 1);
    assert.match(errors[0]!.message, new RegExp(`^data link to 127\\.0\\.0\\.1:${port} closed`));
    // Not the lost link again but a new dial, which finds nobody listening there now.
    const late: Error[] = [];
    a.open({ host: '127.0.0.1', port, link: true, hello: hello('down', 0), onError: (e) => late.push(e) });
    await waitFor('the new dial failed', () => late.length === 1);
    assert.match(late[0]!.message, new RegExp(`^data link to 127\\.0\\.0\\.1:${port} closed: .*ECONNREFUSED`));
  });
});
