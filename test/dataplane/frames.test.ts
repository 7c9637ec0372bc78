// Data-plane frames built without copies read as the codec encodes them; columns, one timestamp and
// constant columns, and tuples as columns, only for a receiver that says it reads them.
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { elementFrame, frameElement, RemoteChannel, tcpTransport } from '../../src/dataplane/index.js';
import { FrameReader, gatheredWrites } from '../../src/net/index.js';
import { decodeFrame, decodeMessage, encodeFrame, encodeRecordBatch, makeMessage } from '../../src/protocol/index.js';
import { BATCH } from '../../src/runtime/index.js';

const values = [
  { auction: 1, price: 2.5, channel: 'Apple' },
  { auction: 2, price: 3, channel: 'Baidu' },
];
const timestamps = [10, 11];
/** A pre-aggregation's partials: `[key, count]`. */
const pairs = [
  [7, 3],
  [-2, 1],
];

test('a DataBatch frame built in place equals the codec encoding the same batch', () => {
  for (const vs of [values, pairs]) {
    for (const [columns, constants, tuples] of [
      [false, false, false],
      [true, false, false],
      [true, true, false],
      [false, true, false],
      [true, true, true],
      [false, false, true],
    ] as const) {
      const frame = elementFrame({ kind: BATCH, channel: 0, values: vs, timestamps }, { columns, constants, tuples });
      assert.deepEqual(
        frame,
        encodeFrame(
          makeMessage('DataBatch', { batch: encodeRecordBatch(vs, timestamps, { columns, constants, tuples }) }),
        ),
      );
      const back = frameElement(decodeFrame(frame), 3);
      assert.deepEqual(back, { kind: BATCH, channel: 3, values: vs, timestamps, onTaken: undefined });
    }
  }
});

test('a batch is columnar only when asked (the receiver said it reads columns)', () => {
  const flags = (f: Buffer): number => f[9 + 4]!;
  assert.equal(flags(elementFrame({ kind: BATCH, channel: 0, values, timestamps })) & 2, 0);
  assert.equal(
    flags(
      elementFrame({ kind: BATCH, channel: 0, values, timestamps }, { columns: true, constants: false, tuples: false }),
    ) & 2,
    2,
  );
  const shared = [10, 10];
  assert.equal(
    flags(
      elementFrame(
        { kind: BATCH, channel: 0, values, timestamps: shared },
        { columns: true, constants: false, tuples: false },
      ),
    ) & 4,
    0,
  );
  assert.equal(
    flags(
      elementFrame(
        { kind: BATCH, channel: 0, values, timestamps: shared },
        { columns: true, constants: true, tuples: false },
      ),
    ) & 4,
    4,
    'one timestamp',
  );
  assert.equal(
    flags(
      elementFrame(
        { kind: BATCH, channel: 0, values: pairs, timestamps },
        { columns: true, constants: true, tuples: false },
      ),
    ) & 10,
    0,
    'tuples as msgpack',
  );
  assert.equal(
    flags(
      elementFrame(
        { kind: BATCH, channel: 0, values: pairs, timestamps },
        { columns: true, constants: true, tuples: true },
      ),
    ) & 10,
    10,
    'tuples as columns',
  );
  assert.equal(
    flags(
      elementFrame({ kind: BATCH, channel: 0, values, timestamps }, { columns: true, constants: true, tuples: true }),
    ) & 8,
    0,
    'objects are no tuples',
  );
});

test('over a real connection: columns, one timestamp and tuples to a receiver whose credits say it reads them, less to an older one', async () => {
  // This build's credit; one from before tuples (no tuples field); from before constants; from before columns.
  const credits = {
    now: encodeFrame(makeMessage('DataCredit', { credits: 4, columns: true, constants: true, tuples: true })),
    beforeTuples: Buffer.from([0, 0, 0, 7, 205, 0, 0, 0, 4, 1, 1]),
    beforeConstants: Buffer.from([0, 0, 0, 6, 205, 0, 0, 0, 4, 1]),
    beforeColumns: Buffer.from([0, 0, 0, 5, 205, 0, 0, 0, 4]),
  };
  for (const [receiver, credit] of Object.entries(credits))
    for (const vs of [values, pairs]) {
      const seen: Promise<Buffer> = new Promise((resolve, reject) => {
        const server = createServer((socket) => {
          const reader = new FrameReader(socket);
          void (async () => {
            const hello = await reader.next();
            assert.equal(decodeMessage(hello!).type, 'DataHello');
            socket.write(credit);
            const batch = await reader.next();
            socket.destroy();
            server.close();
            resolve(batch!);
          })().catch((err: unknown) => {
            socket.destroy();
            server.close();
            reject(err as Error);
          });
        }).listen(0, '127.0.0.1');
        server.once('listening', () => {
          const port = (server.address() as AddressInfo).port;
          const hello = {
            jobId: 'j',
            attempt: 0,
            edgeIndex: 0,
            upstreamSubtask: 0,
            downstreamTaskId: 't',
            downstreamSubtask: 0,
            upstreamTaskId: 'u',
            mac: '',
          };
          const ch = new RemoteChannel(tcpTransport('127.0.0.1', port, hello), () => undefined);
          ch.push({ kind: BATCH, channel: 0, values: vs, timestamps: [10, 10] });
          void seen.finally(() => ch.destroy()).catch(() => undefined);
        });
      });
      const payload = await seen;
      assert.equal(payload[0], 201, 'a DataBatch');
      const flags = payload[1 + 4 + 4]!;
      assert.equal(
        (flags & 2) !== 0,
        vs === values ? receiver !== 'beforeColumns' : receiver === 'now',
        `${receiver}: columnar or msgpack`,
      );
      assert.equal(
        (flags & 4) !== 0,
        receiver === 'now' || receiver === 'beforeTuples',
        `${receiver}: one timestamp or one each`,
      );
      assert.equal((flags & 8) !== 0, vs === pairs && receiver === 'now', `${receiver}: tuples as columns or not`);
      const head = Buffer.alloc(4);
      head.writeUInt32BE(payload.length);
      assert.deepEqual(
        frameElement(decodeFrame(Buffer.concat([head, payload])), 0),
        { kind: BATCH, channel: 0, values: vs, timestamps: [10, 10], onTaken: undefined },
        'and it decodes',
      );
    }
});

test('writes of one synchronous run are gathered (the socket corked until a microtask), in order', async () => {
  const got: Buffer[] = [];
  const server = createServer((s) => s.on('data', (d: Buffer) => got.push(d))).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  try {
    const write = gatheredWrites(socket);
    write(Buffer.from('a'));
    write(Buffer.from('b'));
    assert.equal(socket.writableCorked, 1, 'held while the run goes on');
    await Promise.resolve();
    assert.equal(socket.writableCorked, 0, 'released when it yields');
    write(Buffer.from('c'));
    await new Promise((r) => setTimeout(r, 0));
    while (Buffer.concat(got).length < 3) await new Promise((r) => setTimeout(r, 5));
    assert.equal(Buffer.concat(got).toString(), 'abc');
  } finally {
    socket.destroy();
    server.close();
  }
});
