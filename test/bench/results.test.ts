import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { median, writeResults, type BenchResult } from '../../bench/results.js';

describe('the benchmark results files', () => {
  test('latest.json holds the machine and every result; latest.html draws them as inline SVG with no script', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-bench-results-'));
    try {
      const results: BenchResult[] = [
        {
          name: 'q0 local p=1',
          group: 'nexmark-local',
          query: 'q0',
          recordsPerSec: 3e6,
          cpuSecondsPerMillion: 0.3,
          baselineRecordsPerSec: 3.5e6,
          ratioToBaseline: 3 / 3.5,
        },
        { name: 'q5 local p=1', group: 'nexmark-local', query: 'q5', recordsPerSec: 8e5, cpuSecondsPerMillion: 1.4 },
        {
          name: 'q5 2 workers p=2',
          group: 'nexmark-cluster',
          query: 'q5',
          parallelism: 2,
          recordsPerSec: 1.1e6,
          peakRssMb: [210, 220],
        },
        { name: 'recovery 24 subtasks', group: 'recovery', recoveredMs: 2683 },
      ];
      const { json, html } = await writeResults(dir, results, { quick: true });
      const written = JSON.parse(await readFile(json, 'utf8')) as {
        machine: Record<string, unknown>;
        results: BenchResult[];
      };
      assert.deepEqual(written.results, results);
      assert.equal(written.machine.quick, true);
      assert.equal(typeof written.machine.cpus, 'number');
      const page = await readFile(html, 'utf8');
      assert.doesNotMatch(page, /<script|src="http/);
      assert.equal(page.match(/<svg /g)?.length, 2, 'throughput per query, and scaling');
      assert.match(page, /q5 2 workers p=2/);
      assert.match(page, /<td>recovery 24 subtasks<\/td>/);
      assert.match(page, /loop 3\.50 M/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('median of an odd and an even count', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.ok(Number.isNaN(median([])));
  });
});
