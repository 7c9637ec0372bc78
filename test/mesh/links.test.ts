// A mesh run's links over real sockets, in one process: three members open exactly one link per pair
// (each dials the lower, accepts the higher), whichever starts first; frames cross a link both ways; a
// link from another run is refused and the member missing it is named at the deadline.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExchangeListener, MeshError, openMesh, type MeshLinks } from '../../src/mesh/index.js';
import { makeMessage } from '../../src/protocol/index.js';
import { setTimeout as sleep } from 'node:timers/promises';

async function listeners(n: number): Promise<{ servers: ExchangeListener[]; members: string[] }> {
  const ls = await Promise.all(Array.from({ length: n }, () => ExchangeListener.listen('127.0.0.1:0')));
  const sorted = [...ls].sort((a, b) => (a.address < b.address ? -1 : 1));
  return { servers: sorted, members: sorted.map((l) => l.address) };
}

test('three members: one link per pair, whichever starts first, and frames cross them both ways', async () => {
  const { servers, members } = await listeners(3);
  // The highest dials before the others open their meshes: its connections wait at their listeners.
  const late = openMesh({ members, me: 2, listener: servers[2]!, fingerprint: 'f', timeoutMs: 5_000 });
  await sleep(250);
  const meshes: MeshLinks[] = await Promise.all([
    openMesh({ members, me: 0, listener: servers[0]!, fingerprint: 'f', timeoutMs: 5_000 }),
    openMesh({ members, me: 1, listener: servers[1]!, fingerprint: 'f', timeoutMs: 5_000 }),
    late,
  ]);
  assert.deepEqual(
    meshes.map((m) => [...m.peers.keys()].sort()),
    [
      [1, 2],
      [0, 2],
      [0, 1],
    ],
  );
  // 0 <-> 2 is one connection: what 2 writes on its link to 0, 0 reads on its link to 2, and back.
  const got = meshes[0]!.peers.get(2)!.readOne();
  meshes[2]!.peers.get(0)!.send(makeMessage('MeshRefused', { reason: 'from 2' }));
  assert.deepEqual(await got, { type: 'MeshRefused', reason: 'from 2' });
  const back = meshes[2]!.peers.get(0)!.readOne();
  meshes[0]!.peers.get(2)!.send(makeMessage('MeshRefused', { reason: 'from 0' }));
  assert.deepEqual(await back, { type: 'MeshRefused', reason: 'from 0' });
  for (const m of meshes) m.close();
  for (const s of servers) s.close();
});

test('a link from another run is refused; the member left without it names who is missing', async () => {
  const { servers, members } = await listeners(2);
  const stranger = openMesh({ members, me: 1, listener: servers[1]!, fingerprint: 'other run', timeoutMs: 5_000 });
  await assert.rejects(
    openMesh({ members, me: 0, listener: servers[0]!, fingerprint: 'f', timeoutMs: 600 }),
    (e: unknown) => {
      assert.ok(e instanceof MeshError);
      assert.equal(
        e.message,
        `member 0 (${members[0]}) has no link to ${members[1]} after 600 ms; is every member running, and its --exchange address reachable from here?`,
      );
      return true;
    },
  );
  (await stranger).close();
  for (const s of servers) s.close();
});

test('a member whose listener is not up yet is dialled again until it is', async () => {
  // Member 1 listens; member 0's address is a free port that sorts first, let go: nobody listens there
  // when member 1 first dials it.
  // Of two listeners, the one whose address sorts second stays; the other is let go. (Waiting for a free
  // port that sorts before a given one could fail when that one was low in the ephemeral range.)
  const pair = [await ExchangeListener.listen('127.0.0.1:0'), await ExchangeListener.listen('127.0.0.1:0')].sort(
    (x, y) => (x.address < y.address ? -1 : 1),
  );
  const [gone, one] = pair as [ExchangeListener, ExchangeListener];
  gone.close();
  const zeroAddress = gone.address;
  const members = [zeroAddress, one.address];
  const early = openMesh({ members, me: 1, listener: one, fingerprint: 'f', timeoutMs: 5_000 });
  await sleep(300);
  const zero = await ExchangeListener.listen(zeroAddress);
  const [a, b] = await Promise.all([
    openMesh({ members, me: 0, listener: zero, fingerprint: 'f', timeoutMs: 5_000 }),
    early,
  ]);
  assert.deepEqual([[...a.peers.keys()], [...b.peers.keys()]], [[1], [0]]);
  a.close();
  b.close();
  zero.close();
  one.close();
});
