// A cluster's data links with real worker processes: the windowed file-sink job at parallelism 2 on two
// workers (two shuffles, so several channels cross between them each way) runs with one link dialled by
// each worker to the other, and commits exactly the uninterrupted output; a worker started with
// `--data-transport channel` (as a worker from before links would) gets a connection per channel and
// sends that way, and the job's output is the same.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { JobView } from '../../src/coordinator/index.js';
import { ClusterHarness, type NodeProcess } from '../harness/cluster.js';
import { submitSinkJob } from '../harness/file-sink-job.js';
import { visibleLines, waitFor } from '../helpers.js';

/** The channels a worker has sent records on to another process (one series each). */
async function channelsSending(h: ClusterHarness, w: NodeProcess): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${w.httpPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('clink_channel_records_sent_total{') && Number(l.slice(l.lastIndexOf(' ') + 1)) > 0)
    .length;
}

async function runAndCheck(h: ClusterHarness, whileRunning: (workers: NodeProcess[]) => Promise<void>): Promise<void> {
  const { jobId, client, out, expected } = await submitSinkJob(h, { rate: 4000, params: { sinkApart: '1' } });
  try {
    await h.waitForJob<JobView>(jobId, ['RUNNING']);
    await whileRunning([h.worker('w1'), h.worker('w2')]);
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, true, done.error);
    assert.deepEqual(await visibleLines(out), expected, 'exactly the uninterrupted output');
    assert.equal((await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body.restarts.length, 0, 'no restart');
  } finally {
    client.close();
  }
}

describe('data links between worker processes', () => {
  test('every channel from one worker to the other travels on one link; the output is exact', async () => {
    const h = await ClusterHarness.start({ workers: 2, slots: 2 });
    try {
      await runAndCheck(h, async (workers) => {
        for (const w of workers) {
          await waitFor(`${w.name} sending on several channels`, async () => (await channelsSending(h, w)) >= 2);
          assert.equal(
            await h.workerMetric(w, 'clink_data_links', { direction: 'out' }),
            1,
            `${w.name} dialled one link`,
          );
          assert.equal(
            await h.workerMetric(w, 'clink_data_links', { direction: 'in' }),
            1,
            `${w.name} accepted one link`,
          );
        }
      });
    } finally {
      await h.close();
    }
  });

  test('a worker that takes no links gets a connection per channel and sends that way; the output is the same', async () => {
    const h = await ClusterHarness.start({ workers: 1, slots: 2 });
    try {
      await h.addWorker(['--data-transport=channel']);
      await h.waitForWorkers(2);
      await runAndCheck(h, async (workers) => {
        for (const w of workers) {
          await waitFor(`${w.name} sending on several channels`, async () => (await channelsSending(h, w)) >= 2);
          assert.equal(await h.workerMetric(w, 'clink_data_links'), 0, `${w.name} has no link`);
        }
      });
    } finally {
      await h.close();
    }
  });
});
