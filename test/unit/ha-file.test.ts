// The file HA primitives with real locks, files and helper processes: the fenced compare-and-set, the
// lock probe, the lock holder, and the file election.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  FencedError,
  FileElection,
  fencedRemove,
  fencedWrite,
  LockHolder,
  probeLocks,
  readLeader,
  readRecord,
} from '../../src/ha/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { EnvironmentError } from '../../src/errors.js';
import { deferred } from '../../src/util/index.js';

const dirs: string[] = [];
const tempDir = async (): Promise<string> => {
  const d = await mkdtemp(join(tmpdir(), 'clink-ha-'));
  dirs.push(d);
  return d;
};
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('fenced metadata', () => {
  test('a record carries its writer epoch; a lower epoch is refused, an equal or higher one writes', async () => {
    const path = join(await tempDir(), 'manifest.json');
    await fencedWrite(path, 3, { job: 'a' });
    assert.deepEqual(await readRecord(path), { job: 'a', epoch: 3 });
    await assert.rejects(
      fencedWrite(path, 2, { job: 'stale' }),
      (err: unknown) =>
        err instanceof FencedError &&
        err.code === 'CLINK_ERR_FENCED' &&
        /at epoch 2: it holds epoch 3/.test(err.message),
    );
    await fencedWrite(path, 3, { job: 'b' });
    await fencedWrite(path, 4, { job: 'c' });
    assert.deepEqual(await readRecord(path), { job: 'c', epoch: 4 });
    await assert.rejects(fencedRemove(path, 3), FencedError);
    await fencedRemove(path, 4);
    assert.equal(await readRecord(path), undefined);
    // The lock file stays: it is never unlinked.
    assert.ok((await stat(`${path}.wlock`)).isFile());
  });

  test('two writers cannot straddle the check: the second waits for the first to finish, then is refused', async () => {
    const path = join(await tempDir(), 'active-leader.json');
    await fencedWrite(path, 1, { who: 'old' });
    const inSection = deferred<void>();
    const release = deferred<void>();
    // The newer leader is inside the critical section (checked, not yet written), held there.
    const newer = fencedWrite(
      path,
      2,
      { who: 'new' },
      { inSection: async () => (inSection.resolve(), release.promise) },
    );
    await inSection.promise;
    // The superseded one read epoch 1 before: had it not waited, it would pass the check now.
    let staleSettled = false;
    const stale = fencedWrite(path, 1, { who: 'old again' }).finally(() => (staleSettled = true));
    stale.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(staleSettled, false, 'the second writer waits while the first holds the section');
    release.resolve();
    await newer;
    await assert.rejects(stale, FencedError);
    assert.deepEqual(await readRecord(path), { who: 'new', epoch: 2 });
  });
});

describe('file locks and the file election', () => {
  test('a local directory honours locks between processes: the probe passes', async () => {
    assert.equal(await probeLocks(await tempDir()), undefined);
  });

  test('a directory whose locks a second process is granted too is refused, naming the cause and the override; the override stands with a warning', async () => {
    const dir = await tempDir();
    const { log, lines } = memoryLogger();
    const probe = async (d: string): Promise<string> =>
      `the HA directory ${d} granted one lock to two processes: its filesystem does not honour POSIX locks`;
    const refused = new FileElection({ dir, host: '127.0.0.1', log, probe });
    await assert.rejects(
      refused.start(),
      (err: unknown) =>
        err instanceof EnvironmentError &&
        /granted one lock to two processes.*; put --ha-dir on a filesystem that honours locks, or pass --ha-allow-unsafe-locks to stand anyway$/.test(
          err.message,
        ),
    );
    await refused.close();
    const unsafe = new FileElection({ dir, host: '127.0.0.1', log, probe, allowUnsafeLocks: true, pollMs: 20 });
    let epoch = 0;
    unsafe.onBecomeLeader((e) => void (epoch = e));
    await unsafe.start();
    while (epoch === 0) await new Promise((r) => setTimeout(r, 10));
    assert.ok(
      lines().some(
        (l) =>
          l.level === 40 &&
          /granted one lock to two processes.*; standing anyway \(--ha-allow-unsafe-locks\)$/.test(String(l.msg)),
      ),
    );
    await unsafe.close();
  });

  test('one lock holder at a time; a holder killed with -9 lets the next one in', async () => {
    const lock = join(await tempDir(), 'leader.lock');
    const first = LockHolder.spawn(lock, 20);
    await first.acquired;
    const second = LockHolder.spawn(lock, 20);
    let secondHolds = false;
    void second.acquired.then(() => (secondHolds = true));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(secondHolds, false);
    process.kill(first.pid!, 'SIGKILL');
    assert.match((await first.ended).detail, /killed \(SIGKILL\)/);
    await second.acquired;
    await second.release();
  });

  test('two candidates: exactly one leads; when it resigns the other leads with the next epoch and announces itself', async () => {
    const dir = await tempDir();
    const { log } = memoryLogger();
    const elected: [string, number][] = [];
    const lost: string[] = [];
    const make = (name: string): FileElection => {
      const e = new FileElection({ dir, host: '127.0.0.1', log, pollMs: 20 });
      e.onBecomeLeader((epoch) => void elected.push([name, epoch]));
      e.onLoseLeadership((why) => void lost.push(`${name}: ${why}`));
      return e;
    };
    const a = make('a');
    const b = make('b');
    await Promise.all([a.start(), b.start()]);
    while (elected.length === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(elected.length, 1, 'exactly one leads');
    const [leaderName, epoch] = elected[0]!;
    assert.equal(epoch, 1);
    const [leader, standby] = leaderName === 'a' ? [a, b] : [b, a];
    assert.equal(leader.isLeader, true);
    assert.equal(standby.isLeader, false);
    await leader.announce({ host: '127.0.0.1', port: 6123 });
    assert.equal((await readLeader(dir))?.port, 6123);
    await leader.close();
    while (elected.length < 2) await new Promise((r) => setTimeout(r, 10));
    assert.equal(elected[1]![1], 2);
    assert.equal(standby.isLeader, true);
    await standby.announce({ host: '127.0.0.1', port: 7000 });
    assert.deepEqual(
      { ...(await readLeader(dir)), at: 0, node: '' },
      { host: '127.0.0.1', port: 7000, epoch: 2, at: 0, node: '' },
    );
    assert.equal(JSON.parse(await readFile(join(dir, 'epoch.json'), 'utf8')).epoch, 2);
    await standby.close();
    assert.deepEqual(lost, []);
  });
});
