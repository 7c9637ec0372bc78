/**
 * Each Nexmark query of examples/nexmark/ against a straightforward reference computation over the
 * same generated events (a loop over `nexmarkGenerator().event(n)`), at parallelism 2.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadJobModule } from '../../src/loader/index.js';
import { nexmarkGenerator, runJob, type Auction, type Bid, type NexmarkEvent, type Person } from '../../src/index.js';
import { sortBy } from '../helpers.js';

const EVENTS = 60_000;
/** A slower event-time rate for the windowed queries, so the events span many windows (120 s). */
const SLOW = 500;

let cacheDir: string;
before(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), 'clink-nexmark-'));
});
after(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

async function run<T>(query: string, params: Record<string, string> = {}): Promise<T[]> {
  const { job } = await loadJobModule(new URL(`../../examples/nexmark/${query}.ts`, import.meta.url).pathname, {
    cacheDir,
  });
  const r = await runJob(job, { parallelism: 2, params: { events: String(EVENTS), ...params } });
  return (r.collected[query] ?? []) as T[];
}

function events(eventsPerSecond = 10_000): NexmarkEvent[] {
  const g = nexmarkGenerator({ eventsPerSecond });
  return Array.from({ length: EVENTS }, (_, n) => g.event(n));
}
const bidsOf = (es: NexmarkEvent[]): Bid[] => es.filter((e): e is Bid => e.kind === 'bid');

describe('Nexmark queries (examples/nexmark) against reference computations', () => {
  test('q0 passes every bid through, projected', async () => {
    const got = await run<Record<string, unknown>>('q0');
    const want = bidsOf(events()).map((b) => ({
      auction: b.auction,
      bidder: b.bidder,
      price: b.price,
      dateTime: b.dateTime,
      extra: b.extra,
    }));
    assert.equal(got.length, 55_200);
    assert.deepEqual(sortBy(got), sortBy(want));
  });

  test('sink=blackhole: the benchmark sink drops every record, and its operator counts them', async () => {
    const { job } = await loadJobModule(new URL('../../examples/nexmark/q0.ts', import.meta.url).pathname, {
      cacheDir,
    });
    const r = await runJob(job, { parallelism: 2, params: { events: '5000', sink: 'blackhole' } });
    assert.deepEqual(r.collected, {});
    const tail = r.tasks.at(-1)!;
    assert.equal(tail.recordsIn, 5_000, 'every event entered the chain');
    assert.equal(tail.recordsOut, 4_600, 'every bid reached the blackhole');
  });

  test('q1 converts every price to euros', async () => {
    const got = await run<{ price: number }>('q1');
    const want = bidsOf(events()).map((b) => ({
      auction: b.auction,
      bidder: b.bidder,
      price: 0.908 * b.price,
      dateTime: b.dateTime,
      extra: b.extra,
    }));
    assert.deepEqual(sortBy(got), sortBy(want));
  });

  test('q2 keeps the bids on every 123rd auction', async () => {
    const got = await run<{ auction: number; price: number }>('q2');
    const want = bidsOf(events())
      .filter((b) => b.auction % 123 === 0)
      .map((b) => ({ auction: b.auction, price: b.price }));
    assert.ok(want.length > 50, `${want.length} selected`);
    assert.deepEqual(sortBy(got), sortBy(want));
  });

  test('q3 joins category-10 auctions with their sellers from OR, ID and CA', async () => {
    const got = await run<{ name: string; city: string; state: string; id: number }>('q3');
    const es = events();
    const people = new Map(es.filter((e): e is Person => e.kind === 'person').map((p) => [p.id, p]));
    const want = es
      .filter((e): e is Auction => e.kind === 'auction' && e.category === 10)
      .flatMap((a) => {
        const p = people.get(a.seller);
        return p && ['OR', 'ID', 'CA'].includes(p.state)
          ? [{ name: p.name, city: p.city, state: p.state, id: a.id }]
          : [];
      });
    assert.ok(want.length > 100, `${want.length} joined`);
    assert.deepEqual(sortBy(got), sortBy(want));
  });

  test('q4 averages the winning bid of each auction per category', async () => {
    const got = await run<{ category: number; avgPrice: number }>('q4');
    const es = events();
    const auctions = es.filter((e): e is Auction => e.kind === 'auction');
    const best = new Map<number, number>();
    const byId = new Map(auctions.map((a) => [a.id, a]));
    for (const b of bidsOf(es)) {
      const a = byId.get(b.auction);
      if (a && b.dateTime >= a.dateTime && b.dateTime <= a.expires)
        best.set(a.id, Math.max(best.get(a.id) ?? -1, b.price));
    }
    const sums = new Map<number, { n: number; sum: number }>();
    for (const [id, price] of best) {
      const s = sums.get(byId.get(id)!.category) ?? { n: 0, sum: 0 };
      s.n++;
      s.sum += price;
      sums.set(byId.get(id)!.category, s);
    }
    assert.equal(got.length, best.size, 'one update per closed auction with a bid');
    const last = new Map<number, number>();
    for (const r of got) last.set(r.category, r.avgPrice);
    assert.deepEqual([...last.keys()].sort(), [...sums.keys()].sort());
    for (const [category, { n, sum }] of sums)
      assert.ok(Math.abs(last.get(category)! - sum / n) < 1e-6 * (sum / n), `category ${category}`);
  });

  test('q5 finds the auctions with the most bids in each sliding window', async () => {
    const got = await run<{ auction: number; count: number; start: number; end: number }>('q5', {
      eventsPerSecond: String(SLOW),
    });
    const counts = new Map<string, number>();
    for (const b of bidsOf(events(SLOW))) {
      const last = b.dateTime - (b.dateTime % 2_000);
      for (let start = last; start > b.dateTime - 10_000; start -= 2_000)
        counts.set(`${b.auction}/${start}`, (counts.get(`${b.auction}/${start}`) ?? 0) + 1);
    }
    const max = new Map<number, number>();
    for (const [k, c] of counts) {
      const start = Number(k.split('/')[1]);
      max.set(start, Math.max(max.get(start) ?? 0, c));
    }
    const want = [...counts]
      .filter(([k, c]) => c === max.get(Number(k.split('/')[1])))
      .map(([k, count]) => {
        const [auction, start] = k.split('/').map(Number) as [number, number];
        return { auction, count, start, end: start + 10_000 };
      });
    assert.ok(max.size > 50, `${max.size} windows`);
    assert.deepEqual(sortBy(got), sortBy(want));
  });

  test('q7 finds the highest bids of each tumbling window', async () => {
    const got = await run<{ auction: number; price: number; bidder: number; dateTime: number; end: number }>('q7', {
      eventsPerSecond: String(SLOW),
    });
    const best = new Map<number, Bid[]>();
    for (const b of bidsOf(events(SLOW))) {
      const end = b.dateTime - (b.dateTime % 10_000) + 10_000;
      const cur = best.get(end);
      if (!cur || b.price > cur[0]!.price) best.set(end, [b]);
      else if (b.price === cur[0]!.price) cur.push(b);
    }
    const want = [...best].flatMap(([end, bs]) =>
      bs.map((b) => ({ auction: b.auction, price: b.price, bidder: b.bidder, dateTime: b.dateTime, end })),
    );
    assert.equal(best.size, 12);
    assert.deepEqual(sortBy(got), sortBy(want));
  });

  test('q8 finds the people who opened an auction in the window they registered in', async () => {
    const got = await run<{ id: number; name: string; start: number }>('q8', { eventsPerSecond: String(SLOW) });
    const es = events(SLOW);
    const windowOf = (t: number): number => t - (t % 10_000);
    const sellers = new Set(
      es.filter((e): e is Auction => e.kind === 'auction').map((a) => `${a.seller}/${windowOf(a.dateTime)}`),
    );
    const want = es
      .filter((e): e is Person => e.kind === 'person' && sellers.has(`${e.id}/${windowOf(e.dateTime)}`))
      .map((p) => ({ id: p.id, name: p.name, start: windowOf(p.dateTime) }));
    assert.ok(want.length > 10, `${want.length} new sellers`);
    assert.deepEqual(sortBy(got), sortBy(want));
  });

  test('q11 counts each bidder’s bids per session', async () => {
    const got = await run<{ key: number; start: number; end: number; count: number }>('q11', {
      eventsPerSecond: String(SLOW),
    });
    const byBidder = new Map<number, number[]>();
    for (const b of bidsOf(events(SLOW)))
      (byBidder.get(b.bidder) ?? byBidder.set(b.bidder, []).get(b.bidder)!).push(b.dateTime);
    const want: { key: number; start: number; end: number; count: number }[] = [];
    for (const [bidder, times] of byBidder) {
      times.sort((a, b) => a - b);
      let start = times[0]!;
      let last = start;
      let count = 0;
      for (const t of times) {
        if (t >= last + 10_000) {
          want.push({ key: bidder, start, end: last + 10_000, count });
          start = t;
          count = 0;
        }
        last = t;
        count++;
      }
      want.push({ key: bidder, start, end: last + 10_000, count });
    }
    assert.ok(want.length > byBidder.size, 'some bidders have several sessions');
    assert.deepEqual(sortBy(got), sortBy(want));
  });

  test('q12 counts each bidder’s bids per processing-time window: every bid once', async () => {
    const got = await run<{ key: number; count: number; start: number; end: number }>('q12');
    const want = new Map<number, number>();
    for (const b of bidsOf(events())) want.set(b.bidder, (want.get(b.bidder) ?? 0) + 1);
    const totals = new Map<number, number>();
    for (const r of got) {
      assert.equal(r.end - r.start, 10_000);
      totals.set(r.key, (totals.get(r.key) ?? 0) + r.count);
    }
    assert.deepEqual(sortBy([...totals]), sortBy([...want]));
  });
});
