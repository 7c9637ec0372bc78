import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { loadJobBundle, loadJobModule, sdkEntryPath } from '../../src/loader/index.js';
import { runJob } from '../../src/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { builtinConnectors, unknownConnectors } from '../../src/connectors/index.js';
import { validateConnectors } from '../../src/runtime/factory.js';

let cacheDir: string;
before(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), 'clink-examples-'));
});
after(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

const example = (name: string) =>
  loadJobModule(new URL(`../../examples/${name}.ts`, import.meta.url).pathname, { cacheDir });

describe('examples', () => {
  test('word count counts every word once, at end of input', async () => {
    const { job } = await example('wordcount');
    const r = await runJob(job, { parallelism: 2 });
    const counts = Object.fromEntries(
      (r.collected['word counts'] as { word: string; count: number }[]).map((w) => [w.word, w.count]),
    );
    assert.equal(counts.to, 4);
    assert.equal(counts.the, 3);
    assert.equal(counts.be, 2);
    assert.equal(
      Object.values(counts).reduce((a, b) => a + b, 0),
      39,
    );
  });

  test('the window-aggregation demo accounts for every reading, per sensor and window', async () => {
    const { job } = await example('window-aggregation');
    const r = await runJob(job, { parallelism: 2, params: { count: '20000' } });
    const rows = r.collected['sensor stats per 5 minutes'] as {
      window: string;
      sensor: string;
      count: number;
      mean: number;
      max: number;
    }[];
    assert.equal(
      rows.reduce((n, x) => n + x.count, 0),
      20_000,
    );
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
    assert.match(a.bundlePath, /[0-9a-f]{64}\.[0-9a-f]{16}\.mjs$/);
  });

  test('a bundle bound by an engine at another path, since deleted, is not reused (a stale cache in /tmp once broke CI)', async () => {
    const { code, sha256 } = await example('wordcount');
    // Another checkout of clink: an SDK entry elsewhere, which then disappears.
    // Inside the suite's temp dir, so a failing assertion still leaves nothing behind.
    const other = await mkdtemp(join(cacheDir, 'other-checkout-'));
    const otherEntry = join(other, 'index.mjs');
    await writeFile(otherEntry, `export * from ${JSON.stringify(pathToFileURL(sdkEntryPath()).href)};\n`);
    const there = await loadJobBundle(code, { cacheDir, sdkEntry: otherEntry });
    assert.equal(there.sha256, sha256);
    assert.ok((await readFile(there.bundlePath, 'utf8')).includes(pathToFileURL(otherEntry).href));
    await rm(other, { recursive: true, force: true });

    const here = await loadJobBundle(code, { cacheDir });
    assert.notEqual(here.bundlePath, there.bundlePath);
    assert.ok(!(await readFile(here.bundlePath, 'utf8')).includes(other));
    const r = await runJob(here.job, { parallelism: 1 });
    assert.equal((r.collected['word counts'] as unknown[]).length > 0, true);
  });

  test('the connector examples type-check, plan, and name only connectors this build has, with the options each needs', async () => {
    for (const name of ['kafka-pipeline', 'postgres-upsert', 'nats-relay']) {
      const { job } = await example(name);
      const { spec } = buildJob(job, { parallelism: 2, params: { url: 'postgres://u@127.0.0.1/db' } });
      const connectors = spec.operators.map((o) => o.options.connector).filter((c) => typeof c === 'string');
      assert.deepEqual(unknownConnectors(spec.operators), [], name);
      assert.ok(connectors.length >= 2, `${name}: ${connectors.join(', ')}`);
      validateConnectors(
        spec.operators,
        new Map(),
        builtinConnectors(() => undefined),
      );
    }
  });
});
