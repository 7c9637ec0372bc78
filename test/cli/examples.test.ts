import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadJobModule } from '../../src/loader/index.js';
import { runJob } from '../../src/index.js';

let cacheDir: string;
before(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), 'clink-examples-'));
});
after(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

const example = (name: string) => loadJobModule(new URL(`../../examples/${name}.ts`, import.meta.url).pathname, { cacheDir });

describe('examples', () => {
  test('word count counts every word once, at end of input', async () => {
    const { job } = await example('wordcount');
    const r = await runJob(job, { parallelism: 2 });
    const counts = Object.fromEntries((r.collected['word counts'] as { word: string; count: number }[]).map((w) => [w.word, w.count]));
    assert.equal(counts.to, 4);
    assert.equal(counts.the, 3);
    assert.equal(counts.be, 2);
    assert.equal(Object.values(counts).reduce((a, b) => a + b, 0), 39);
  });

  test('the window-aggregation demo accounts for every reading, per sensor and window', async () => {
    const { job } = await example('window-aggregation');
    const r = await runJob(job, { parallelism: 2, params: { count: '20000' } });
    const rows = r.collected['sensor stats per 5 minutes'] as { window: string; sensor: string; count: number; mean: number; max: number }[];
    assert.equal(rows.reduce((n, x) => n + x.count, 0), 20_000);
    assert.equal(new Set(rows.map((x) => `${x.window}/${x.sensor}`)).size, rows.length);
    for (const x of rows) assert.ok(x.mean >= -10 && x.mean <= 90 && x.max <= 90);
  });

  test('fraud detection alerts only on a small then a large transaction', async () => {
    const { job } = await example('fraud-detection');
    const r = await runJob(job, { parallelism: 3 });
    const alerts = r.collected.alerts as { small: number; large: number }[];
    assert.ok(alerts.length > 0);
    for (const a of alerts) assert.ok(a.small < 1 && a.large > 500, JSON.stringify(a));
    const again = await runJob(job, { parallelism: 1 });
    assert.equal((again.collected.alerts as unknown[]).length, alerts.length, 'same alerts at any parallelism');
  });

  test('a module loads from its content hash: the same file gives the same bundle', async () => {
    const a = await example('wordcount');
    const b = await example('wordcount');
    assert.equal(a.sha256, b.sha256);
    assert.equal(a.bundlePath, b.bundlePath);
    assert.match(a.bundlePath, /[0-9a-f]{64}\.mjs$/);
  });
});
