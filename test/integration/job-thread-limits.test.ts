// A job's thread runs under the V8 limits its worker was given: the heap (--task-heap-mb) and the young
// generation (--task-young-generation-mb), and a worker left to its defaults gives the documented ones.
// And the library's HA part loads on one thread after another of a process that loaded it too (a
// bench runs the local runtime so): its file-lock addon is not context-aware, and crashed Node then.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { nodeFlagsOf, nodeOptions } from '../../src/cli/node-flag-table.js';
import { memoryLogger } from '../../src/log/index.js';
import '../../src/ha/index.js';
import { startThread } from '../../src/util/index.js';
import { JobThread } from '../../src/worker/job-thread.js';
import { DEFAULT_WORKER_CONFIG } from '../../src/worker/index.js';

function startJobThread(heapMb: number, youngGenerationMb: number): JobThread {
  return new JobThread({
    config: { workerId: 'w-limits', peerUpdateTimeoutMs: 1_000, batchSize: 100, batchLingerMs: 0 },
    dataHost: '127.0.0.1',
    stallTimeoutMs: 30_000,
    startedAt: Date.now(),
    heapMb,
    youngGenerationMb,
    log: memoryLogger('error').log,
    send: () => {},
    onIdle: () => false,
    onExit: () => {},
  });
}

test('a job thread runs with the heap and young generation it is given', async () => {
  const t = startJobThread(300, 96);
  try {
    assert.equal(t.resourceLimits.maxOldGenerationSizeMb, 300);
    assert.equal(t.resourceLimits.maxYoungGenerationSizeMb, 96);
  } finally {
    await t.close('test over', 2_000);
  }
  assert.deepEqual(t.resourceLimits, {}, 'an ended thread has no limits left');
});

/** The worker flags `clink node` parses from `args`. */
function workerFlags(...args: string[]): ReturnType<typeof nodeFlagsOf>['worker'] {
  const cmd = new Command().exitOverride();
  for (const { option } of nodeOptions()) cmd.addOption(option);
  cmd.parse(args, { from: 'user' });
  return nodeFlagsOf({ ...cmd.opts(), role: 'worker' }).worker;
}

test('--task-young-generation-mb and --task-heap-mb reach the worker, at their documented defaults when not given', () => {
  assert.equal(workerFlags('--task-young-generation-mb=64').taskYoungGenerationMb, 64);
  const defaults = workerFlags();
  assert.equal(defaults.taskYoungGenerationMb, DEFAULT_WORKER_CONFIG.taskYoungGenerationMb);
  assert.equal(defaults.taskHeapMb, DEFAULT_WORKER_CONFIG.taskHeapMb);
  assert.equal(DEFAULT_WORKER_CONFIG.taskYoungGenerationMb, 192);
  assert.throws(
    () => workerFlags('--task-young-generation-mb=0'),
    /'--task-young-generation-mb <mb>' argument '0' is invalid. expected a whole number >= 1/,
  );
});

test('the HA part imports on one thread after another, this thread holding it too (its file-lock addon loads only when a lock is taken)', async () => {
  for (let i = 0; i < 2; i++) {
    const t = startThread(new URL('../fixtures/threads/import-library.ts', import.meta.url), {});
    const said = new Promise((resolve) => t.once('message', resolve));
    const exited = new Promise<number>((resolve) => t.once('exit', resolve));
    assert.equal(await said, 'imported', `thread ${i + 1}`);
    assert.equal(await exited, 0, `thread ${i + 1} ended cleanly`);
  }
});
