import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { priceOf } from '../../src/connectors/nexmark/generator.js';
import { describe, test } from 'node:test';
import { nexmark, nexmarkGenerator, type NexmarkEvent } from '../../src/index.js';
import type { SourceOutput, SourceReader } from '../../src/sdk/index.js';
import { collect, sortBy } from '../helpers.js';

const ctx = (subtaskIndex: number, parallelism: number) =>
  ({ subtaskIndex, parallelism, signal: new AbortController().signal }) as unknown as Parameters<
    NonNullable<typeof nexmark.source>['createReader']
  >[1];

async function readAll(reader: SourceReader<NexmarkEvent>, limit = Infinity): Promise<NexmarkEvent[]> {
  const out: NexmarkEvent[] = [];
  const sink: SourceOutput<NexmarkEvent> = {
    collect: (v) => out.push(v),
    collectWithTimestamp: (v) => out.push(v),
    emitWatermark: () => {},
    markIdle: () => {},
  };
  while (out.length < limit && (await reader.read(sink, Math.min(1000, limit - out.length))) === 'MORE');
  return out;
}

describe('the nexmark source', () => {
  test('people, auctions and bids come 1:3:46 in every 50 events, with consecutive person and auction ids', () => {
    const g = nexmarkGenerator({ seed: 3 });
    const counts = { person: 0, auction: 0, bid: 0 };
    let person = 1000;
    let auction = 1000;
    for (let n = 0; n < 50_000; n++) {
      const e = g.event(n);
      counts[e.kind]++;
      if (e.kind === 'person') assert.equal(e.id, person++);
      if (e.kind === 'auction') {
        assert.equal(e.id, auction++);
        assert.ok(e.expires > e.dateTime && e.reserve > e.initialBid && e.category >= 10 && e.category < 15);
      }
      if (e.kind === 'bid') {
        assert.ok(e.auction >= 1000 && e.auction <= auction + 10, `bid on auction ${e.auction} before ${auction}`);
        assert.ok(e.bidder >= 1000 && e.bidder <= person + 10);
        assert.ok(e.price >= 100 && e.price <= 100_000_000);
        assert.ok(e.extra.length > 40 && e.extra.length < 90, `bid extra ${e.extra.length} chars`);
      }
    }
    assert.deepEqual(counts, { person: 1_000, auction: 3_000, bid: 46_000 });
  });

  test('the events are pinned: a faster generator must make the same ones (the first 200 000 of seed 7, by hash)', () => {
    const g = nexmarkGenerator({ seed: 7, eventsPerSecond: 10_000 });
    const h = createHash('sha256');
    for (let n = 0; n < 200_000; n++) h.update(JSON.stringify(g.event(n)));
    assert.equal(h.digest('hex'), '2ff6f1e7f0e9e2c8bbe001ae3c844f2329477bb88b17f74d4e29fc49a22c829a');
  });

  test("a bid's price is Math.pow's, also where the cheaper Math.exp would round the other way", () => {
    const exact = (u: number): number => Math.round(Math.pow(10, u * 6) * 100);
    // A seeded sweep of 2 million draws holds ~40 near a half, where only the fallback keeps them equal.
    let k = 12345;
    let nearHalf = 0;
    for (let i = 0; i < 2_000_000; i++) {
      k = (Math.imul(k, 1664525) + 1013904223) >>> 0;
      const u = k / 4294967296;
      const y = Math.pow(10, u * 6) * 100;
      if (Math.abs(y - Math.floor(y) - 0.5) < 1e-5) nearHalf++;
      assert.equal(priceOf(u), exact(u), `u = ${u}`);
    }
    assert.ok(nearHalf > 0, 'the sweep reached the fallback');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), (n) => priceOf(n / 4294967296) === exact(n / 4294967296)),
    );
  });

  test('event time advances with eventsPerSecond from baseTimeMs; events are a pure function of (seed, n)', () => {
    const g = nexmarkGenerator({ eventsPerSecond: 1_000, baseTimeMs: 5_000, seed: 9 });
    assert.equal(g.event(0).dateTime, 5_000);
    assert.equal(g.event(2_500).dateTime, 7_500);
    assert.deepEqual(nexmarkGenerator({ eventsPerSecond: 1_000, baseTimeMs: 5_000, seed: 9 }).event(777), g.event(777));
    assert.notDeepEqual(
      nexmarkGenerator({ eventsPerSecond: 1_000, baseTimeMs: 5_000, seed: 10 }).event(777),
      g.event(777),
    );
    // Half the bids go to the current hot auction (the newest id that is a multiple of 100).
    let bids = 0;
    let hot = 0;
    for (let n = 0; n < 20_000; n++) {
      const e = g.event(n);
      if (e.kind !== 'bid') continue;
      bids++;
      if ((e.auction - 1000) % 100 === 0) hot++;
    }
    assert.ok(hot / bids > 0.5 && hot / bids < 0.55, `${hot} of ${bids} bids on hot auctions`);
  });

  test('split over subtasks, it emits exactly the single generator’s events', async () => {
    const options = { events: 20_000, seed: 5 };
    const g = nexmarkGenerator(options);
    const expected = Array.from({ length: 20_000 }, (_, n) => g.event(n));
    const three = await collect<NexmarkEvent>((env) => env.fromSource('nexmark', options).collect(), {
      parallelism: 3,
    });
    assert.equal(three.length, 20_000);
    assert.deepEqual(sortBy(three), sortBy(expected));
  });

  test('a reader restored from its snapshot goes on where it stopped', async () => {
    const o = nexmark.source!.validate!({ events: 10_000, seed: 2 });
    const first = await nexmark.source!.createReader(o, ctx(1, 2));
    const before = await readAll(first, 2_000);
    const position = first.snapshot!();
    const second = await nexmark.source!.createReader(o, ctx(1, 2));
    await second.restore!(position);
    const rest = await readAll(second);
    const whole = await readAll(await nexmark.source!.createReader(o, ctx(1, 2)));
    // Subtask 1 of 2 owns splits 64..127 of 128: 78 events each below 10 000 (10 000 = 78 * 128 + 16).
    assert.equal(whole.length, 4_992);
    assert.deepEqual([...before, ...rest], whole);
  });

  test('unbounded without events; rateLimited paces it to eventsPerSecond', async () => {
    const o = nexmark.source!.validate!({ eventsPerSecond: 2_000, rateLimited: true });
    const reader = await nexmark.source!.createReader(o, ctx(0, 1));
    const started = Date.now();
    const got = await readAll(reader, 600);
    const ms = Date.now() - started;
    assert.equal(got.length, 600);
    assert.ok(ms >= 200, `600 events at 2000/s took ${ms} ms`);
  });

  test('bad options are refused, naming the option', () => {
    assert.throws(() => nexmark.source!.validate!({ events: -1 }), /nexmark: invalid options:[\s\S]*events/);
    assert.throws(() => nexmark.source!.validate!({ eventsPerSecond: 0 }), /eventsPerSecond/);
    assert.throws(() => nexmark.source!.validate!({ evnets: 10 }), /evnets/);
  });
});
