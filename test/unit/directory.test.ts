// makeDirectory: parents made one level at a time, so a filesystem that refuses an entry (procfs) is
// an error at once, where Node 20's recursive mkdir never settles.
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { makeDirectory } from '../../src/util/index.js';

test('makeDirectory creates missing parents, accepts an existing directory, and refuses what cannot be made', async () => {
  const root = await mkdtemp(join(tmpdir(), 'clink-dir-'));
  try {
    const deep = join(root, 'a', 'b', 'c');
    await makeDirectory(deep);
    assert.ok((await stat(deep)).isDirectory());
    await makeDirectory(deep);
    await writeFile(join(root, 'file'), '');
    await assert.rejects(makeDirectory(join(root, 'file')), { code: 'EEXIST' });
    await assert.rejects(makeDirectory(join(root, 'file', 'below')), { code: 'ENOTDIR' });
    await assert.rejects(makeDirectory('/proc/clink-cannot-be-here/x'), { code: 'ENOENT' });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
