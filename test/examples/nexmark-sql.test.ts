/**
 * The Nexmark queries of examples/nexmark/sql/ (after ddl.sql) give the same results as their SDK
 * versions in examples/nexmark/, at parallelism 2 over the same generated events.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadJobModule } from '../../src/loader/index.js';
import { runJob } from '../../src/index.js';
import { runSql } from '../sql/run-sql.js';

const EVENTS = '60000';
/** The windowed queries' event-time rate, so the events span many windows (as the SDK test runs them). */
const SLOW = '500';

let cacheDir: string;
before(async () => (cacheDir = await mkdtemp(join(tmpdir(), 'clink-nexmark-sql-'))));
after(async () => rm(cacheDir, { recursive: true, force: true }));

async function sdk(query: string, params: Record<string, string>): Promise<Record<string, unknown>[]> {
  const { job } = await loadJobModule(new URL(`../../examples/nexmark/${query}.ts`, import.meta.url).pathname, {
    cacheDir,
  });
  const r = await runJob(job, { parallelism: 2, params: { events: EVENTS, ...params } });
  return (r.collected[query] ?? []) as Record<string, unknown>[];
}

async function sql(query: string, params: Record<string, string>): Promise<Record<string, unknown>[]> {
  const dir = new URL('../../examples/nexmark/sql/', import.meta.url);
  const text =
    (await readFile(new URL('ddl.sql', dir), 'utf8')) + (await readFile(new URL(`${query}.sql`, dir), 'utf8'));
  return (await runSql(text, { params: { events: EVENTS, ...params } })).rows;
}

const sorted = (rows: readonly object[]): string[] => rows.map((r) => JSON.stringify(r)).sort();

describe('Nexmark in SQL gives what the SDK versions give', () => {
  for (const q of ['q0', 'q1', 'q2']) {
    test(`${q}: the same rows`, async () => {
      const [a, b] = await Promise.all([sql(q, {}), sdk(q, {})]);
      assert.ok(b.length > 0);
      assert.deepEqual(sorted(a), sorted(b));
    });
  }

  test('q3: the same sellers joined with their auctions (a regular join)', async () => {
    const [a, b] = await Promise.all([sql('q3', {}), sdk('q3', {})]);
    assert.ok(b.length > 100);
    assert.deepEqual(sorted(a), sorted(b));
  });

  test('q4: the same final average per category (two GROUP BYs without a window: updates, materialized)', async () => {
    const [a, b] = await Promise.all([sql('q4', {}), sdk('q4', {})]);
    const last = new Map<unknown, unknown>();
    for (const r of b) last.set(r.category, r.avgPrice);
    assert.ok(last.size >= 5);
    assert.deepEqual(sorted(a), sorted([...last].map(([category, avgPrice]) => ({ category, avgPrice }))));
  });

  test('q5: the same hottest auctions per sliding window (a cascaded window aggregation and a window join)', async () => {
    const [a, b] = await Promise.all([sql('q5', { eventsPerSecond: SLOW }), sdk('q5', { eventsPerSecond: SLOW })]);
    assert.ok(b.length > 30, 'one or more per window');
    assert.deepEqual(sorted(a), sorted(b.map((r) => ({ auction: r.auction, num: r.count }))));
  });

  test('q7: the same highest bids per window (a join on price, checked against the window)', async () => {
    const [a, b] = await Promise.all([sql('q7', { eventsPerSecond: SLOW }), sdk('q7', { eventsPerSecond: SLOW })]);
    const pick = (r: Record<string, unknown>): object => ({
      auction: r.auction,
      price: r.price,
      bidder: r.bidder,
      dateTime: r.dateTime,
    });
    assert.ok(b.length >= 12, 'one or more per window');
    assert.deepEqual(sorted(a.map(pick)), sorted(b.map(pick)));
  });

  test('q8: the same new sellers per window (a window join of two window aggregations)', async () => {
    const [a, b] = await Promise.all([sql('q8', { eventsPerSecond: SLOW }), sdk('q8', { eventsPerSecond: SLOW })]);
    assert.ok(b.length > 10);
    assert.deepEqual(sorted(a), sorted(b.map((r) => ({ id: r.id, name: r.name, starttime: r.start }))));
  });

  test('q11: the same sessions and counts', async () => {
    const [a, b] = await Promise.all([sql('q11', { eventsPerSecond: SLOW }), sdk('q11', { eventsPerSecond: SLOW })]);
    const fromSdk = b.map((r) => ({ bidder: r.key, bid_count: r.count, starttime: r.start, endtime: r.end }));
    assert.ok(fromSdk.length > 100);
    assert.deepEqual(sorted(a), sorted(fromSdk));
  });

  test('q12: every bid counted once, per bidder (processing-time windows differ run to run)', async () => {
    const [a, b] = await Promise.all([sql('q12', {}), sdk('q12', {})]);
    const total = (rows: Record<string, unknown>[], key: string, count: string): Map<unknown, number> => {
      const m = new Map<unknown, number>();
      for (const r of rows) m.set(r[key], (m.get(r[key]) ?? 0) + (r[count] as number));
      return m;
    };
    const sqlTotals = total(a, 'bidder', 'bid_count');
    assert.deepEqual(sqlTotals, total(b, 'key', 'count'));
    assert.equal(
      [...sqlTotals.values()].reduce((s, n) => s + n, 0),
      55_200,
      'every bid of 60,000 events',
    );
  });
});
