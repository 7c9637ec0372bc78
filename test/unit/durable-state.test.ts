// Durable, verified state: short writes are continued, failed writes leave nothing behind, a file that
// changed after it was written is never loaded, and a restore falls back past a damaged checkpoint.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  resolveRestore,
  retainCheckpoints,
  writeCompletedMarker,
  type CompletedMarker,
} from '../../src/coordinator/index.js';
import { decodeStateFile, writeStateFile } from '../../src/state/index.js';
import { nodeFs, writeFileDurably, type DurableFs } from '../../src/util/index.js';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'clink-durable-'));
  dirs.push(d);
  return d;
}

const sample = {
  operators: [{ state: [{ name: 'n', groups: [[1, new Uint8Array(50_000).fill(3)]] }] }],
  source: { offset: 42 },
};

/** A file system that takes at most `perCall` bytes per write, and fails with ENOSPC past `capacity`. */
function shortWrites(perCall: number, capacity = Infinity): DurableFs {
  return {
    ...nodeFs,
    async open(path, flags) {
      const fh = await nodeFs.open(path, flags);
      let used = 0;
      return {
        async writev(buffers) {
          const room = capacity - used;
          if (room <= 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          const first = buffers[0]!.subarray(0, Math.min(perCall, room));
          const r = await fh.writev([first]);
          used += r.bytesWritten;
          return r;
        },
        sync: () => fh.sync(),
        stat: () => fh.stat(),
        close: () => fh.close(),
      };
    },
  };
}

describe('durable writes', () => {
  test('a file system that writes 7 bytes at a time still gets every byte: the write continues after each short write', async () => {
    const dir = await tempDir();
    const path = join(dir, 'a#0.state');
    const written = await writeStateFile(path, sample, shortWrites(7_001));
    const file = await readFile(path);
    assert.equal(file.length, written.bytes);
    assert.deepEqual(decodeStateFile(file, path), sample);
    assert.deepEqual(await readdir(dir), ['a#0.state'], 'no temp file left');
  });

  test('a full disk (ENOSPC after 36,864 bytes) fails the write naming the file and how far it got, and leaves no temp file', async () => {
    const dir = await tempDir();
    const path = join(dir, 'a#0.state');
    await assert.rejects(writeStateFile(path, sample, shortWrites(4_096, 36_864)), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'CLINK_ERR_STORAGE');
      assert.match(
        err.message,
        /^could not write a#0\.state durably in .* \(36864 of \d+ bytes written\): ENOSPC: no space left on device/,
      );
      return true;
    });
    assert.deepEqual(await readdir(dir), [], 'neither the file nor its temp');
  });

  test('a file system that takes nothing is a failure, not a loop', async () => {
    const dir = await tempDir();
    const none: DurableFs = {
      ...nodeFs,
      open: async (p, f) => ({ ...(await nodeFs.open(p, f)), writev: async () => ({ bytesWritten: 0 }) }),
    };
    await assert.rejects(writeFileDurably(join(dir, 'x'), [Buffer.from('hello')], none), /took 0 of 5 bytes left/);
  });
});

describe('verified state files', () => {
  test('one flipped byte anywhere in the body is refused by its checksum, naming the file', async () => {
    const dir = await tempDir();
    const path = join(dir, 'a#0.state');
    await writeStateFile(path, sample);
    const file = await readFile(path);
    for (const at of [40, 41, file.length - 1, Math.floor(file.length / 2)]) {
      const damaged = Buffer.from(file);
      damaged[at]! ^= 0x01;
      assert.throws(() => decodeStateFile(damaged, path), {
        code: 'CLINK_ERR_STATE',
        message: new RegExp(
          `^${path.replace(/[.#]/g, '\\$&')} is damaged: its SHA-256 is [0-9a-f]{64}, the file records [0-9a-f]{64}`,
        ),
      });
    }
    assert.throws(() => decodeStateFile(file.subarray(0, file.length - 10), path), /is damaged/);
  });
});

/** A job's marker directory with checkpoints 1..n of two subtasks, state under `state/chk-<id>`. */
async function checkpoints(n: number): Promise<{ dir: string; stateDir: string }> {
  const dir = await tempDir();
  const stateDir = join(dir, 'state');
  for (let id = 1; id <= n; id++) {
    const chk = join(stateDir, `chk-${id}`);
    await mkdir(chk, { recursive: true });
    const files: CompletedMarker['files'] = {};
    for (const key of ['src#0', 'src#1']) {
      const w = await writeStateFile(join(chk, `${key}.state`), { id, key });
      files[key] = { bytes: w.bytes, sha256: w.sha256 };
    }
    await writeCompletedMarker(dir, {
      checkpointId: id,
      jobId: 'j',
      jobName: 'job',
      subtasks: ['src#0', 'src#1'],
      stateDir: chk,
      completedAtMs: id,
      stateBytes: 0,
      files,
    });
  }
  return { dir, stateDir };
}

describe('restore verification', () => {
  test('the newest checkpoint verifies: it is the restore point, nothing skipped', async () => {
    const { dir } = await checkpoints(2);
    const p = await resolveRestore(dir, 0);
    assert.equal(p.marker.checkpointId, 2);
    assert.deepEqual(p.skipped, []);
  });

  for (const [what, damage, reason] of [
    [
      'a flipped byte',
      async (f: string) => {
        const b = await readFile(f);
        b[b.length - 1]! ^= 0x10;
        await writeFile(f, b);
      },
      /is damaged: its SHA-256 is [0-9a-f]{64}, the marker records [0-9a-f]{64}/,
    ],
    ['a truncated file', (f: string) => truncate(f, 20), /holds 20 bytes, the marker records \d+/],
    ['a missing file', (f: string) => rm(f), /is missing \(ENOENT\)/],
  ] as const) {
    test(`${what} in the newest checkpoint: the restore falls back to the one before, saying why; named, it is refused`, async () => {
      const { dir, stateDir } = await checkpoints(3);
      const bad = join(stateDir, 'chk-3', 'src#1.state');
      await damage(bad);
      const p = await resolveRestore(dir, 0);
      assert.equal(p.marker.checkpointId, 2);
      assert.equal(p.skipped.length, 1);
      assert.equal(p.skipped[0]!.checkpointId, 3);
      assert.ok(p.skipped[0]!.reason.includes(bad), p.skipped[0]!.reason);
      assert.match(p.skipped[0]!.reason, reason);
      await assert.rejects(resolveRestore(dir, 3), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'CLINK_ERR_STATE');
        assert.ok(
          err.message.startsWith(`restore: checkpoint 3 in ${dir} is unusable: checkpoint 3: state file ${bad}`),
          err.message,
        );
        return true;
      });
    });
  }

  test('no checkpoint verifies: the restore is refused, naming each', async () => {
    const { dir, stateDir } = await checkpoints(2);
    await rm(join(stateDir, 'chk-1', 'src#0.state'));
    await truncate(join(stateDir, 'chk-2', 'src#0.state'), 3);
    await assert.rejects(
      resolveRestore(dir, 0),
      /^UnusableCheckpointsError: restore: no usable checkpoint in .*: checkpoint 2: state file .*chk-2\/src#0\.state holds 3 bytes.*; checkpoint 1: state file .*chk-1\/src#0\.state is missing/,
    );
  });

  test('retention sweeps the state of checkpoints that never completed and temp files of failed marker writes', async () => {
    const { dir, stateDir } = await checkpoints(3);
    await mkdir(join(stateDir, 'chk-0'));
    await mkdir(join(stateDir, 'chk-9'));
    await rm(join(dir, 'COMPLETED-2'));
    await writeFile(join(dir, 'COMPLETED-4.123.tmp'), '{');
    await retainCheckpoints(dir, stateDir, 1);
    assert.deepEqual((await readdir(stateDir)).sort(), ['chk-3', 'chk-9'], 'chk-9 may still be in progress');
    assert.deepEqual((await readdir(dir)).sort(), ['COMPLETED-3', 'state']);
  });
});
