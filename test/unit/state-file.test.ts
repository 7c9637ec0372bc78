import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { decodeStateFile, decodeStateFileSliced, encodeStateFile, writeStateFile } from '../../src/state/index.js';

const concat = (chunks: Uint8Array[]): Buffer => Buffer.concat(chunks);

const sample = {
  operators: [
    {
      state: [
        {
          name: 'reduce',
          kind: 'value',
          groups: [
            [3, new Uint8Array(5_000).fill(7)],
            [9, new Uint8Array(10).fill(1), new Uint8Array(2_000).fill(2)],
          ],
        },
      ],
      own: undefined,
    },
    {
      committables: [
        { path: '/tmp/x/.part-1.pending', bytes: new Uint8Array([1, 2, 3]), at: new Map([['k', -Infinity]]) },
      ],
    },
  ],
  source: { offset: 123_456, done: new Set([1, 2]) },
};

describe('state files', () => {
  test('round trip: large byte arrays go after the header and come back as views into the file', () => {
    const chunks = encodeStateFile(sample);
    assert.equal(chunks.length, 4, 'prefix, header and the two arrays of 1 KB or more');
    const file = concat(chunks);
    const back = decodeStateFile(file, 'sample') as typeof sample;
    assert.deepEqual(back, sample);
    const big = (back.operators[0] as unknown as { state: { groups: [number, Uint8Array][] }[] }).state[0]!
      .groups[0]![1];
    assert.equal(big.buffer, file.buffer, 'not copied out of the file');
  });

  test('written durably and read back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-state-file-'));
    try {
      const path = join(dir, 'a#0.state');
      const { bytes } = await writeStateFile(path, sample);
      const file = await readFile(path);
      assert.equal(file.length, bytes);
      assert.deepEqual(decodeStateFile(file, path), sample);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a file that is not a state file, or is truncated or damaged, is refused with a StateError naming it', () => {
    const file = concat(encodeStateFile(sample));
    assert.throws(() => decodeStateFile(Buffer.from('{"json": true}'), 'x.state'), {
      code: 'CLINK_ERR_STATE',
      message: /x\.state is not a clink state file/,
    });
    assert.throws(() => decodeStateFile(file.subarray(0, file.length - 1), 'x.state'), {
      code: 'CLINK_ERR_STATE',
      message: /x\.state is damaged: its SHA-256 is/,
    });
    assert.throws(() => decodeStateFile(file.subarray(0, 20), 'x.state'), {
      code: 'CLINK_ERR_STATE',
      message: /x\.state is truncated: 20 bytes, not even its 40-byte prefix/,
    });
    fc.assert(
      fc.property(fc.nat(file.length - 1), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const damaged = Buffer.from(file);
        damaged[at]! ^= flip;
        try {
          decodeStateFile(damaged, 'x.state');
        } catch (err) {
          assert.equal((err as { code?: string }).code, 'CLINK_ERR_STATE', String(err));
        }
      }),
      { numRuns: 300 },
    );
  });

  test('the sliced decode (a restore on a job thread) reads what the plain one reads and refuses what it refuses', async () => {
    const file = concat(encodeStateFile(sample));
    assert.deepEqual(await decodeStateFileSliced(file, 'x.state'), sample);
    const damaged = Buffer.from(file);
    damaged[file.length - 1]! ^= 1;
    await assert.rejects(decodeStateFileSliced(damaged, 'x.state'), {
      code: 'CLINK_ERR_STATE',
      message: /x\.state is damaged: its SHA-256 is/,
    });
    await assert.rejects(decodeStateFileSliced(Buffer.from('nope, not state'), 'x.state'), /not a clink state file/);
  });

  test('a file of the first format (CLKS, no checksum) written before checksums is still read', () => {
    const [prefix, ...body] = encodeStateFile(sample);
    const legacy = Buffer.concat([Buffer.from('CLKS'), Buffer.from(prefix!).subarray(4, 8), ...body]);
    assert.deepEqual(decodeStateFile(legacy, 'old.state'), sample);
  });
});
