// A worker's JobHost, driven in-process with real frames, a real DataServer and a real job module.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { NO_CHECKPOINTS } from '../../src/client/index.js';
import { DataServer } from '../../src/dataplane/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { createPhysicalPlan, KeyGroupRange } from '../../src/plan/index.js';
import { makeMessage, type Message } from '../../src/protocol/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { JobHost } from '../../src/worker/index.js';
import { waitFor } from '../helpers.js';

test('a checkpoint asked for while the subtasks wait for their peers is taken as they start, not declined', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'clink-job-host-'));
  const data = await DataServer.start({ host: '127.0.0.1' });
  try {
    const loaded = await loadJobModule(resolve(import.meta.dirname, '../fixtures/jobs/trivial.ts'), { cacheDir: dir });
    const spec = buildJob(loaded.job, { parallelism: 1 }).spec;
    const plan = createPhysicalPlan(spec);
    const sent: Message[] = [];
    const host = new JobHost(
      'j1',
      { workerId: 'w9', peerUpdateTimeoutMs: 30_000, batchSize: 1_000, batchLingerMs: 0, cacheDir: dir },
      {
        data,
        log: memoryLogger().log,
        metrics: new ClinkMetrics(),
        stdout: () => undefined,
        send: (m) => sent.push(m),
      },
    );
    const tasks = plan.subtasks.map((s) => {
      const range = KeyGroupRange.forSubtask(s.index, 1, spec.maxParallelism);
      return {
        taskId: s.taskId,
        subtaskIndex: s.index,
        parallelism: 1,
        chainJson: '[]',
        keyGroupStart: range.start,
        keyGroupEnd: range.end,
        restoreCheckpointId: 0,
        attempt: 0,
        restoreParallelism: 0,
      };
    });
    await host.handle(
      makeMessage('Deploy', {
        jobId: 'j1',
        jobName: 'trivial',
        specJson: JSON.stringify(spec),
        tasks,
        modules: [{ sha256: loaded.sha256, bytes: loaded.code, sourceMap: loaded.sourceMap }],
        checkpoint: { ...NO_CHECKPOINTS, checkpointDir: join(dir, 'ckpt') },
        params: '{}',
        buildParallelism: 1,
      }),
    );
    assert.deepEqual(
      sent.map((m) => m.type),
      tasks.map(() => 'SubtaskListening'),
    );
    // Deployed but not started (no PeerUpdate yet): it takes part as it starts, not before.
    await host.handle(
      makeMessage('TriggerCheckpoint', { jobId: 'j1', checkpointId: 4, timestampMs: 0, savepointDir: '' }),
    );
    // One given up before the start (its timeout, say) is not taken.
    await host.handle(
      makeMessage('TriggerCheckpoint', { jobId: 'j1', checkpointId: 3, timestampMs: 0, savepointDir: '' }),
    );
    await host.handle(makeMessage('AbortCheckpoint', { jobId: 'j1', checkpointId: 3, reason: 'expired' }));
    assert.equal(sent.filter((m) => m.type === 'SubtaskCheckpointed').length, 0, 'no ack before it starts');
    await host.handle(
      makeMessage('PeerUpdate', {
        jobId: 'j1',
        subtasks: plan.subtasks.map((s) => ({ taskId: s.taskId, subtaskIndex: s.index, peers: [] })),
      }),
    );
    await waitFor('the deferred checkpoint acked', () =>
      sent.some((m) => m.type === 'SubtaskCheckpointed' && m.checkpointId === 4),
    );
    const acks = sent.filter((m) => m.type === 'SubtaskCheckpointed');
    assert.ok(
      acks.every((m) => m.type === 'SubtaskCheckpointed' && m.ok && m.checkpointId === 4),
      JSON.stringify(acks),
    );
    await host.handle(makeMessage('CancelJob', { jobId: 'j1', reason: 'test over' }));
    await waitFor('the job ended here', () => host.finished);
  } finally {
    await data.close();
    await rm(dir, { recursive: true, force: true });
  }
});
