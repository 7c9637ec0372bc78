/**
 * A SQL job is checkpointed and restarted like any job: submitted over HTTP with checkpoints every
 * 200 ms, a window aggregation and a pass-through into exactly-once file tables, a worker killed -9
 * mid-stream; the job restarts from its checkpoint and the files hold every row exactly once.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobView } from '../../src/coordinator/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { SCENARIO } from '../helpers.js';

const ROWS = 6000;
const START = 1767225600000;

async function jsonLines(dir: string): Promise<Record<string, number>[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.jsonl'));
  const text = (await Promise.all(files.map((f) => readFile(join(dir, f), 'utf8')))).join('');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, number>);
}

describe('SQL jobs survive worker loss', () => {
  test(
    'kill -9 of a worker mid-stream: the SQL job restarts from its checkpoint; its file tables hold every row once',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 3, slots: 4 });
      try {
        const out = join(h.dir, 'out');
        // 6,000 rows at 1,500 a second: four seconds of wall time, 60 s of event time (10 ms apart).
        const sql = `
        CREATE TEMPORARY TABLE readings (id BIGINT, sensor INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
        WITH ('connector' = 'datagen', 'number-of-rows' = '${ROWS}', 'rows-per-second' = '1500',
              'fields.id.kind' = 'sequence', 'fields.sensor.min' = '1', 'fields.sensor.max' = '4',
              'fields.ts.kind' = 'timestamp', 'fields.ts.start-ms' = '${START}', 'fields.ts.step-ms' = '10');
        CREATE TEMPORARY TABLE ids (id BIGINT) WITH ('connector' = 'file', 'path' = '${join(out, 'ids')}');
        CREATE TEMPORARY TABLE counts (wend TIMESTAMP(3), n BIGINT) WITH ('connector' = 'file', 'path' = '${join(out, 'counts')}');
        EXECUTE STATEMENT SET BEGIN
          INSERT INTO ids SELECT id FROM readings;
          INSERT INTO counts SELECT window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end;
        END;`;
        const res = await fetch(
          `http://127.0.0.1:${h.httpPort}/api/v1/jobs/sql?parallelism=2&checkpoint_dir=${encodeURIComponent(join(h.dir, 'ck'))}&checkpoint_interval_ms=200`,
          {
            method: 'POST',
            headers: { 'content-type': 'text/plain' },
            body: sql,
          },
        );
        const body = (await res.json()) as { results: { kind: string; jobId?: string }[] };
        assert.equal(res.status, 201, JSON.stringify(body));
        const jobId = body.results.find((r) => r.kind === 'job')!.jobId!;
        const view = async (): Promise<JobView> => (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
        let checkpoints = 0;
        for (let i = 0; i < 400 && checkpoints === 0; i++) {
          await sleep(25);
          checkpoints = (await h.http<{ checkpoints: unknown[] }>(`/api/v1/jobs/${jobId}/checkpoints`)).body.checkpoints
            .length;
        }
        assert.ok(checkpoints > 0, 'a checkpoint completed before the kill');
        const running = (await view()).subtasks.find((t) => !t.finished);
        assert.ok(running, 'the job was still running at the kill');
        h.worker(running.workerId).child.kill('SIGKILL');
        // The job was submitted over HTTP, so its end is read there (a client hears only of its own submits).
        let after = await view();
        while (after.finishedAt === undefined) {
          await sleep(100);
          after = await view();
        }
        assert.equal(after.state, 'FINISHED', after.error);
        assert.ok(after.restarts.length >= 1, 'the job restarted');
        assert.match(after.restarts[0]!.cause, new RegExp(`worker lost: ${running.workerId}`));
        const ids = (await jsonLines(join(out, 'ids'))).map((r) => r.id!).sort((a, b) => a - b);
        assert.deepEqual(
          ids,
          Array.from({ length: ROWS }, (_, i) => i),
          'every id once',
        );
        const counts = (await jsonLines(join(out, 'counts'))).sort((a, b) => a.wend! - b.wend!);
        assert.deepEqual(
          counts,
          Array.from({ length: 12 }, (_, i) => ({ wend: START + (i + 1) * 5000, n: 500 })),
          'each 5-second window counted once, whole',
        );
      } finally {
        await h.close();
      }
    },
  );
});
