// env:// secrets in connector options: resolved where the connector runs, into a copy; the spec keeps the
// reference; an unset variable fails the job naming the variable and the option.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildJob, defineJob, runJob } from '../../src/index.js';
import { resolveSecrets } from '../../src/connectors/index.js';

const job = defineJob(
  { name: 'secret-sink', version: '1' },
  (env) => void env.fromSequence(1, 3).sinkTo('file', { path: 'env://CLINK_TEST_SINK_DIR' }).name('secret sink'),
);

test('a connector option env://VAR is read where the job runs; the spec keeps only the reference', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'clink-secret-'));
  process.env.CLINK_TEST_SINK_DIR = dir;
  try {
    const { spec } = buildJob(job);
    assert.ok(JSON.stringify(spec).includes('env://CLINK_TEST_SINK_DIR'));
    assert.ok(!JSON.stringify(spec).includes(dir), 'the value is not in the spec');
    await runJob(job);
    assert.ok(
      (await readdir(dir)).some((f) => f.startsWith('part-')),
      'the sink wrote where the variable says',
    );
  } finally {
    delete process.env.CLINK_TEST_SINK_DIR;
    await rm(dir, { recursive: true, force: true });
  }
});

test('an unset variable fails the job, naming the operator, the option and the variable; a malformed reference too', async () => {
  delete process.env.CLINK_TEST_SINK_DIR;
  await assert.rejects(
    runJob(job),
    /operator 'secret sink': option path is env:\/\/CLINK_TEST_SINK_DIR, and CLINK_TEST_SINK_DIR is not set where the job runs: set it in the environment of every worker/,
  );
  assert.deepEqual(resolveSecrets({ a: { b: ['env://X', 'plain'] }, n: 3 }, 'op', { X: 'v' }), {
    a: { b: ['v', 'plain'] },
    n: 3,
  });
  assert.throws(
    () => resolveSecrets({ url: 'env://not a name' }, 'op', {}),
    /option url is 'env:\/\/not a name', which names no environment variable/,
  );
});
