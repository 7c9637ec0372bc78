// The console in a real browser (Debian's Chromium driven by playwright-core): a running job's graph and
// its throughput rising, a savepoint and a cancel from its buttons, a job file uploaded through the submit
// form running to its end; with the cluster token, a login prompt first. Screenshots are saved to
// CLINK_TEST_ARTIFACTS (default: a temp dir, printed).
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Coordinator } from '../../src/coordinator/index.js';
import { buildHttpApp } from '../../src/http/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';

const CHROMIUM = process.env.CLINK_TEST_CHROMIUM;
const ARTIFACTS = process.env.CLINK_TEST_ARTIFACTS ?? join(tmpdir(), 'clink-console-screenshots');
const fixture = (name: string): string => resolve(import.meta.dirname, '../fixtures/jobs', name);

/** The numbers in the text of `selector`, read again until `ok` holds of them (or the wait runs out). */
async function waitForNumbers(
  page: Page,
  selector: string,
  ok: (n: number[]) => boolean,
  what: string,
): Promise<number[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const text = (await page.locator(selector).first().textContent()) ?? '';
    const numbers = [...text.matchAll(/(\d+(?:\.\d+)?)\s*(K|M)?/g)].map(
      (m) => Number(m[1]) * (m[2] === 'M' ? 1e6 : m[2] === 'K' ? 1e3 : 1),
    );
    if (ok(numbers)) return numbers;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: '${text}'`);
    await page.waitForTimeout(200);
  }
}

describe(
  'the console in a browser',
  { skip: CHROMIUM ? false : 'CLINK_TEST_CHROMIUM is not set (npm run test:services installs Chromium and sets it)' },
  () => {
    let browser: Browser;
    before(async () => {
      await mkdir(ARTIFACTS, { recursive: true });
      browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    });
    after(async () => browser?.close());

    test(
      'a running job: its graph and rising throughput; a savepoint and a cancel from its buttons; a job file uploaded through the form runs',
      { timeout: 180_000 },
      async (t) => {
        const h = await ClusterHarness.start({ workers: 2, slots: 2 });
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        try {
          const loaded = await loadJobModule(fixture('unbounded.ts'), { cacheDir: join(h.dir, 'c') });
          const client = await h.client();
          const params = { rate: '4000' };
          const { jobId } = await client.submit({
            module: loaded,
            spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
            params,
            buildParallelism: 2,
            checkpoint: { checkpointDir: join(h.dir, 'ckpt'), intervalMs: 300 },
          });
          const base = `http://127.0.0.1:${h.httpPort}`;

          await page.goto(`${base}/`);
          await page.locator('[data-testid=card-workers] b').filter({ hasText: '2' }).waitFor();
          await page.locator(`[data-testid=jobs] a`, { hasText: jobId }).waitFor();
          await waitForNumbers(
            page,
            '[data-testid=card-throughput] b',
            (n) => (n[0] ?? 0) > 0,
            'the overview to show records read per second',
          );
          // Some history on its chart for the screenshot: the job has read for a few seconds.
          await waitForNumbers(
            page,
            '[data-testid=jobs] tbody tr td:nth-child(5)',
            (n) => (n[0] ?? 0) >= 10_000,
            'ten thousand records read',
          );
          await page.screenshot({ path: join(ARTIFACTS, 'overview.png') });

          await page.locator(`[data-testid=jobs] a`, { hasText: jobId }).click();
          await page.locator('[data-testid=job-graph] .vertex').nth(1).waitFor();
          assert.equal(
            await page.locator('[data-testid=job-graph] .vertex').count(),
            2,
            'two tasks: the source, and the keyed chain',
          );
          assert.match(
            (await page.locator('[data-testid=job-graph] .edge-label').textContent()) ?? '',
            /HASH · \d+ local · \d+ socket/,
          );
          // Throughput rises: the source task's rate goes from nothing to the job's pace.
          const rate = await waitForNumbers(
            page,
            '[data-testid=job-graph] .vertex .vertex-detail',
            (n) => (n[1] ?? 0) > 500,
            "the source task's rate",
          );
          t.diagnostic(`source task at ${rate[1]} records/s in the console`);
          await page.locator('[data-testid=checkpoints] tbody tr td').filter({ hasText: 'periodic' }).first().waitFor();
          // A few seconds of history, so the charts have a line to show.
          await page.waitForFunction("document.querySelectorAll('[data-testid=checkpoints] tbody tr').length >= 8");
          // A checkpoint's id opens each subtask's part: one row per subtask of the job (2 tasks at p=2 here).
          await page.locator('[data-testid=checkpoints] tbody tr button').first().click();
          await page.waitForFunction(
            "document.querySelectorAll('[data-testid=checkpoint-subtasks] tbody tr').length === 4",
          );
          const part = (await page.locator('[data-testid=checkpoint-subtasks] tbody tr').first().textContent()) ?? '';
          assert.match(part, /#\d+ ms\d+ ms\d+ ms(aligned|unaligned)/, 'a subtask, its ack, start delay and alignment');
          await page.screenshot({ path: join(ARTIFACTS, 'job.png'), fullPage: true });

          const savepointDir = join(h.dir, 'savepoint-from-ui');
          page.once('dialog', (d) => void d.accept(savepointDir));
          await page.locator('[data-testid=savepoint]').click();
          await page
            .locator('[data-testid=notice]')
            .filter({ hasText: `written to ${savepointDir}` })
            .waitFor({ timeout: 30_000 });
          page.once('dialog', (d) => void d.accept());
          await page.locator('[data-testid=cancel]').click();
          await page.locator('[data-testid=job-state]').filter({ hasText: 'CANCELED' }).waitFor({ timeout: 30_000 });
          assert.equal((await h.http<{ state: string }>(`/api/v1/jobs/${jobId}`)).body.state, 'CANCELED');

          await page.goto(`${base}/#/submit`);
          await page.locator('[data-testid=submit-file]').setInputFiles(fixture('counted.ts'));
          await page.locator('input[name=parallelism]').fill('2');
          await page.locator('textarea[name=params]').fill('count=600');
          await page.screenshot({ path: join(ARTIFACTS, 'submit.png') });
          await page.locator('[data-testid=submit-button]').click();
          await page.waitForURL(/#\/jobs\/[^/]+$/);
          await page.locator('[data-testid=job-state]').filter({ hasText: 'FINISHED' }).waitFor({ timeout: 60_000 });
          const uploaded = decodeURIComponent(new URL(page.url()).hash.replace('#/jobs/', ''));
          const view = (
            await h.http<{ state: string; sourceRecords: number; parallelism: number }>(`/api/v1/jobs/${uploaded}`)
          ).body;
          assert.deepEqual([view.state, view.sourceRecords, view.parallelism], ['FINISHED', 600, 2]);
          t.diagnostic(`screenshots in ${ARTIFACTS}`);
        } finally {
          await page.close();
          await h.close();
        }
      },
    );

    test(
      'with CLINK_AUTH_TOKEN the console asks for the token, then shows the cluster',
      { timeout: 60_000 },
      async () => {
        const { log } = memoryLogger();
        const metrics = new ClinkMetrics();
        const coordinator = await Coordinator.start({ port: 0 }, { log, metrics, authToken: 'open sesame' });
        const app = buildHttpApp({ role: 'coordinator', metrics, config: {}, coordinator, authToken: 'open sesame' });
        await app.listen({ port: 0, host: '127.0.0.1' });
        const page = await browser.newPage();
        try {
          await page.goto(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/`);
          await page.locator('[data-testid=login]').waitFor();
          await page.screenshot({ path: join(ARTIFACTS, 'login.png') });
          await page.locator('input[type=password]').fill('open sesame');
          await page.locator('[data-testid=login] button').click();
          await page.locator('[data-testid=card-workers] b').filter({ hasText: '0' }).waitFor();
          assert.equal(await page.locator('[data-testid=login]').count(), 0);
        } finally {
          await page.close();
          await app.close();
          await coordinator.stop();
        }
      },
    );
  },
);
