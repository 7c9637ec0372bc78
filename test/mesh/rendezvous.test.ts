// A mesh run's rendezvous over real sockets, in one process: members come together and agree on the
// sorted member set; a joiner whose job differs or whose address is taken is refused with the reason;
// a leader short of members gives up at its deadline naming who came; a leader gone ends the joiners'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join, lead, MeshError, topologyFingerprint, topologyShape, type Led } from '../../src/mesh/index.js';
import { connectWithin } from '../../src/net/index.js';
import {
  CONVERT_CHECKPOINT_PROTOCOL_VERSION,
  encodeFrame,
  LOCAL_PROTOCOL,
  makeMessage,
} from '../../src/protocol/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/sdk/index.js';

const job = defineJob({ name: 'm', version: '1' }, (env: JobEnvironment) => {
  env
    .fromSequence(1, 100)
    .keyBy((x) => x % 5)
    .map((x) => x)
    .uid('work')
    .print();
});
const shape = (parallelismOf: Record<string, number> = {}) =>
  topologyShape(buildJob(job, { parallelism: 2, parallelismOf }).spec, 'a'.repeat(64));

/** A leader on a free control port; resolves with its port once listening, and its outcome. */
async function leader(
  members: number,
  exchange: string,
  timeoutMs = 5_000,
): Promise<{ port: number; led: Promise<Led> }> {
  let port!: (p: number) => void;
  const listening = new Promise<number>((r) => (port = r));
  const led = lead({
    members,
    control: { host: '127.0.0.1', port: 0 },
    exchange,
    shape: shape(),
    timeoutMs,
    onListening: port,
  });
  led.catch(() => undefined);
  return { port: await listening, led };
}

test('three members agree on the sorted member set; the leader is not member 0 unless its address sorts first', async () => {
  const l = await leader(3, '10.0.0.3:7000');
  const [a, b] = await Promise.all([
    join({ leader: `127.0.0.1:${l.port}`, exchange: '10.0.0.2:7000', shape: shape() }),
    join({ leader: `127.0.0.1:${l.port}`, exchange: '10.0.0.1:7000', shape: shape() }),
  ]);
  const led = await l.led;
  const members = ['10.0.0.1:7000', '10.0.0.2:7000', '10.0.0.3:7000'];
  assert.deepEqual([led.members, a.members, b.members], [members, members, members]);
  assert.deepEqual([led.me, a.me, b.me], [2, 1, 0]);
  assert.deepEqual([...led.joiners.keys()].sort(), members.slice(0, 2));
  for (const x of [led, a, b]) x.close();
  assert.equal(led.oldestProtocol, LOCAL_PROTOCOL.version, 'every member speaks this build’s protocol');
});

test('the leader knows the oldest protocol its members speak (a protocol-3 member is not sent ConvertCheckpoint)', async () => {
  const l = await leader(2, '10.0.0.1:7000');
  // A member of protocol 3, as its MeshRegister says.
  const socket = await connectWithin('127.0.0.1', l.port, 'the test leader', 5_000);
  socket.write(
    encodeFrame(
      makeMessage('MeshRegister', {
        exchange: '10.0.0.2:7000',
        fingerprint: topologyFingerprint(shape()),
        shapeJson: JSON.stringify(shape()),
        protocolVersion: CONVERT_CHECKPOINT_PROTOCOL_VERSION - 1,
      }),
    ),
  );
  const led = await l.led;
  led.close();
  socket.destroy();
  assert.equal(led.oldestProtocol, CONVERT_CHECKPOINT_PROTOCOL_VERSION - 1);
});

test('a joiner whose job differs, or whose address is taken, is refused with why; the run completes with the right one', async () => {
  const l = await leader(2, '10.0.0.1:7000');
  const control = `127.0.0.1:${l.port}`;
  await assert.rejects(
    join({ leader: control, exchange: '10.0.0.2:7000', shape: shape({ work: 4 }) }),
    (e: unknown) => {
      assert.ok(e instanceof MeshError);
      assert.equal(e.code, 'CLINK_ERR_MESH');
      assert.equal(
        e.message,
        `the mesh leader at ${control} refused this member: its job differs from the leader's: task 'work' runs at parallelism 2 at the leader and 4 here; give every member the same -p and params`,
      );
      return true;
    },
  );
  await assert.rejects(
    join({ leader: control, exchange: '10.0.0.1:7000', shape: shape() }),
    /refused this member: exchange address 10\.0\.0\.1:7000 is taken by another member; give each member its own --exchange$/,
  );
  const ok = await join({ leader: control, exchange: '10.0.0.2:7000', shape: shape() });
  const led = await l.led;
  assert.deepEqual(led.members, ['10.0.0.1:7000', '10.0.0.2:7000']);
  ok.close();
  led.close();
});

test('a member that never comes: the leader gives up at its deadline, naming who came and how to start the rest', async () => {
  const l = await leader(3, '10.0.0.1:7000', 300);
  const one = join({ leader: `127.0.0.1:${l.port}`, exchange: '10.0.0.2:7000', shape: shape(), timeoutMs: 5_000 });
  await assert.rejects(l.led, (e: unknown) => {
    assert.ok(e instanceof MeshError);
    assert.match(
      e.message,
      new RegExp(
        `^2 of 3 members registered within 300 ms \\(10\\.0\\.0\\.1:7000, 10\\.0\\.0\\.2:7000\\); start the others with clink run <job> --join 127\\.0\\.0\\.1:${l.port} --exchange <host:port>$`,
      ),
    );
    return true;
  });
  // The leader gone, the joiner that waited hears it.
  await assert.rejects(
    one,
    /^MeshError: the mesh leader at 127\.0\.0\.1:\d+ closed the connection before the run was complete/,
  );
});

test('no leader at the address: the joiner dials until its deadline, then says where it looked', async () => {
  const l = await leader(1, '10.0.0.1:7000');
  (await l.led).close();
  await assert.rejects(
    join({ leader: `127.0.0.1:${l.port}`, exchange: '10.0.0.2:7000', shape: shape(), timeoutMs: 700 }),
    /^MeshError: cannot reach the mesh leader at 127\.0\.0\.1:\d+ \(--join\) within 700 ms: could not connect to the mesh leader at 127\.0\.0\.1:\d+: connect ECONNREFUSED .*; is one running there\?$/,
  );
});

test('a joiner started before its leader waits for it', async () => {
  const probe = await leader(1, '10.0.0.1:7000');
  (await probe.led).close();
  const joining = join({
    leader: `127.0.0.1:${probe.port}`,
    exchange: '10.0.0.2:7000',
    shape: shape(),
    timeoutMs: 10_000,
  });
  // The joiner has been refused at least once (nothing listens) before the leader comes.
  await new Promise((r) => setTimeout(r, 300));
  const leading = lead({
    members: 2,
    control: { host: '127.0.0.1', port: probe.port },
    exchange: '10.0.0.1:7000',
    shape: shape(),
    timeoutMs: 5_000,
  });
  const [led, joined] = await Promise.all([leading, joining]);
  assert.deepEqual(joined.members, ['10.0.0.1:7000', '10.0.0.2:7000']);
  led.close();
  joined.close();
});
