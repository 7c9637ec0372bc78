/**
 * SQL queries against reference computations: the golden queries' rows recomputed here by plain loops
 * over the same generated table (datagenRow, with the options written as the SDK takes them), so the
 * golden result files are checked, not just repeated. Then the binder's refusals, each at its position.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { BUILTIN_CAPABILITIES, datagenRow } from '../../src/connectors/index.js';
import { SqlCatalog, SqlError, SqlSession } from '../../src/sql/index.js';
import { runSql } from './run-sql.js';

const TABLES = readFileSync(new URL('./golden/_tables.sql', import.meta.url), 'utf8');
const golden = (name: string): string =>
  TABLES + readFileSync(new URL(`./golden/${name}.sql`, import.meta.url), 'utf8');

interface Order {
  order_id: number;
  customer: number;
  amount: number;
  product: string;
  ts: number;
}
const START = 1767225600000;
const ORDERS: Order[] = Array.from(
  { length: 2000 },
  (_, i) =>
    datagenRow(
      {
        count: 2000,
        seed: 7,
        fields: {
          order_id: { kind: 'sequence', start: 1 },
          customer: { kind: 'int', min: 1, max: 20 },
          amount: { kind: 'double', min: 1, max: 100 },
          product: { kind: 'oneOf', values: ['apple', 'banana', 'cherry', 'durian'] },
          ts: { kind: 'timestamp', startMs: START, stepMs: 50 },
        },
      },
      i,
    ) as unknown as Order,
);
const BIG = ORDERS.filter((o) => o.amount > 90);
const cents = (o: Order): number => Math.trunc(o.amount * 100);

const sorted = (rows: readonly object[]): string[] => rows.map((r) => JSON.stringify(r)).sort();
function sameRows(got: readonly object[], want: readonly object[]): void {
  assert.ok(want.length > 0, 'the reference has rows');
  assert.deepEqual(sorted(got), sorted(want));
}

function groupBy<T>(rows: readonly T[], key: (r: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const r of rows) {
    const k = key(r);
    const g = m.get(k);
    if (g) g.push(r);
    else m.set(k, [r]);
  }
  return m;
}

describe('SQL queries against reference computations', () => {
  test('projection and filter: expressions, CASE, CAST, LIKE, BETWEEN, IN, integer division', async () => {
    const want = ORDERS.filter(
      (o) => o.customer >= 3 && o.customer <= 5 && o.product.includes('an') && ![10, 20, 30].includes(o.order_id),
    ).map((o) => ({
      order_id: o.order_id,
      product: o.product.toUpperCase(),
      amount_cents: cents(o),
      sevenths: Math.trunc(cents(o) / 7),
      band: o.amount >= 50 ? 'high' : 'low',
      tag: `${o.customer}-${o.product}`,
    }));
    sameRows((await runSql(golden('projection'))).rows, want);
  });

  test('TUMBLE: COUNT, SUM, MIN, MAX, AVG, COUNT(DISTINCT) per key and window, with HAVING', async () => {
    const want = [...groupBy(ORDERS, (o) => `${o.customer}/${Math.floor((o.ts - START) / 10_000)}`).values()]
      .filter((g) => g.length > 8)
      .map((g) => {
        const wstart = START + Math.floor((g[0]!.ts - START) / 10_000) * 10_000;
        const amounts = g.map((o) => o.amount);
        return {
          customer: g[0]!.customer,
          wstart,
          wend: wstart + 10_000,
          orders: g.length,
          cents: g.reduce((s, o) => s + cents(o), 0),
          smallest: Math.min(...amounts),
          largest: Math.max(...amounts),
          mean: amounts.reduce((s, a) => s + a, 0) / g.length,
          products: new Set(g.map((o) => o.product)).size,
        };
      });
    const got = (await runSql(golden('tumble'))).rows as typeof want;
    // Sums of doubles depend on the order they were added in (pre-aggregation merges partial sums).
    const key = (r: { customer: number; wstart: number }): string => `${r.customer}/${r.wstart}`;
    assert.deepEqual(got.map(key).sort(), want.map(key).sort());
    const byKey = new Map(want.map((r) => [key(r), r]));
    for (const r of got) {
      const w = byKey.get(key(r))!;
      assert.deepEqual({ ...r, mean: 0 }, { ...w, mean: 0 });
      assert.ok(Math.abs(r.mean - w.mean) < 1e-9, `${key(r)}: mean ${r.mean} vs ${w.mean}`);
    }
  });

  test('HOP: keyed by an expression, over a view, arithmetic over the aggregates', async () => {
    const want: object[] = [];
    for (const [, g] of groupBy(BIG, (o) => String(o.customer % 3))) {
      const ends = new Map<number, Order[]>();
      for (const o of g) {
        // Windows of 20 s every 5 s: those whose [end - 20 s, end) holds the row.
        for (let end = START + (Math.floor((o.ts - START) / 5_000) + 1) * 5_000; end - 20_000 <= o.ts; end += 5_000) {
          if (end - 20_000 <= o.ts && o.ts < end) (ends.get(end) ?? ends.set(end, []).get(end)!).push(o);
        }
      }
      for (const [end, rows] of ends) {
        const total = Math.round(rows.reduce((s, o) => s + o.amount, 0) * 100) / 100;
        want.push({ bucket: g[0]!.customer % 3, window_end: end, tens: rows.length * 10, total });
      }
    }
    const got = (await runSql(golden('hop'))).rows as {
      bucket: number;
      window_end: number;
      tens: number;
      total: number;
    }[];
    const key = (r: { bucket: number; window_end: number; tens: number }): string =>
      `${r.bucket}/${r.window_end}/${r.tens}`;
    assert.deepEqual(got.map(key).sort(), (want as typeof got).map(key).sort());
    const totals = new Map((want as typeof got).map((r) => [key(r), r.total]));
    for (const r of got)
      assert.ok(Math.abs(r.total - totals.get(key(r))!) <= 0.011, `${key(r)}: ${r.total} vs ${totals.get(key(r))}`);
  });

  test('SESSION: sessions per customer close after a 3-second gap', async () => {
    const want: object[] = [];
    for (const g of groupBy(BIG, (o) => String(o.customer)).values()) {
      let session: Order[] = [];
      const close = (): void => {
        if (session.length > 0)
          want.push({
            customer: g[0]!.customer,
            n: session.length,
            window_start: session[0]!.ts,
            window_end: session.at(-1)!.ts + 3_000,
          });
      };
      for (const o of [...g].sort((a, b) => a.ts - b.ts)) {
        if (session.length > 0 && o.ts >= session.at(-1)!.ts + 3_000) {
          close();
          session = [];
        }
        session.push(o);
      }
      close();
    }
    sameRows((await runSql(golden('session'))).rows, want);
  });

  test('window Top-N: the first rows of each window by ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY ...)', async () => {
    const want = [...groupBy(ORDERS, (o) => String(Math.floor((o.ts - START) / 30_000))).values()].flatMap((w) => {
      const wend = START + (Math.floor((w[0]!.ts - START) / 30_000) + 1) * 30_000;
      const totals = [...groupBy(w, (o) => String(o.customer)).values()].map((g) => ({
        customer: g[0]!.customer,
        window_end: wend,
        total: g.reduce((s, o) => s + cents(o), 0),
      }));
      totals.sort((a, b) => b.total - a.total || a.customer - b.customer);
      return totals.slice(0, 2).map((t, i) => ({ ...t, rn: i + 1 }));
    });
    sameRows((await runSql(golden('top-n'))).rows, want);
  });

  test("CUMULATE: each period's windows grow by a step, every one aggregated", async () => {
    const want: object[] = [];
    for (let start = START; start < START + 100_000; start += 30_000) {
      for (let end = start + 10_000; end <= start + 30_000; end += 10_000) {
        const rows = ORDERS.filter((o) => o.ts >= start && o.ts < end);
        if (rows.length > 0)
          want.push({
            window_start: start,
            window_end: end,
            n: rows.length,
            cents: rows.reduce((s, o) => s + cents(o), 0),
          });
      }
    }
    sameRows((await runSql(golden('cumulate'))).rows, want);
  });

  test('OVER aggregations in event time: running (RANGE UNBOUNDED), the last rows (ROWS n PRECEDING), the last seconds (RANGE INTERVAL)', async () => {
    const byCustomer = (rows: readonly Order[]): Order[][] =>
      [...groupBy(rows, (o) => String(o.customer)).values()].map((g) => [...g].sort((a, b) => a.ts - b.ts));
    const running = byCustomer(ORDERS).flatMap((g) =>
      g.map((o, i) => ({
        order_id: o.order_id,
        customer: o.customer,
        orders_so_far: i + 1,
        spent_so_far: g.slice(0, i + 1).reduce((s, x) => s + cents(x), 0),
      })),
    );
    sameRows((await runSql(golden('over-running'))).rows, running);
    const rows = byCustomer(ORDERS).flatMap((g) =>
      g.map((o, i) => {
        const last = g.slice(Math.max(0, i - 2), i + 1).map((x) => x.amount);
        return {
          order_id: o.order_id,
          customer: o.customer,
          largest_of_3: Math.max(...last),
          mean_of_3: last.reduce((s, a) => s + a, 0) / last.length,
        };
      }),
    );
    sameRows((await runSql(golden('over-rows'))).rows, rows);
    const range = byCustomer(BIG).flatMap((g) =>
      g.map((o) => ({
        order_id: o.order_id,
        customer: o.customer,
        recent: g.filter((x) => x.ts <= o.ts && x.ts >= o.ts - 20_000).length,
      })),
    );
    sameRows((await runSql(golden('over-range'))).rows, range);
  });

  test('CURRENT_WATERMARK(ts): NULL before the first watermark, then behind every row that is not late', async () => {
    const { rows } = await runSql(TABLES + 'SELECT order_id, ts, CURRENT_WATERMARK(ts) AS wm FROM orders;', {
      parallelism: 1,
    });
    assert.equal(rows.length, 2000);
    const seen = rows.filter((r) => r.wm !== null);
    assert.ok(seen.length > 0 && seen.length < rows.length, `${seen.length} rows saw a watermark`);
    for (const r of seen)
      assert.ok(
        (r.wm as number) < (r.ts as number) && (r.wm as number) >= START - 1000,
        `row ${String(r.order_id)}: watermark ${String(r.wm)}, ts ${String(r.ts)}`,
      );
  });

  test('functions on dates, numbers and strings, computed per row', async () => {
    const sql = `SELECT order_id, YEAR(ts) AS y, QUARTER(ts) AS q, MONTH(ts) AS mo, DAYOFMONTH(ts) AS dom, DAYOFYEAR(ts) AS doy, DAYOFWEEK(ts) AS dow,
        HOUR(ts) AS h, MINUTE(ts) AS mi, SECOND(ts) AS s, SIGN(amount - 50) AS sg, ROUND(LOG10(amount), 6) AS lg,
        LOCATE('an', product) AS loc, INITCAP(product || ' pie') AS ic, REVERSE(product) AS rev, REGEXP_REPLACE(product, 'a', 'A') AS rr,
        REGEXP_EXTRACT(product, '(b|c)(\\w+)', 2) AS rx, SPLIT_INDEX('a,b,c', ',', MOD(customer, 4)) AS part, LPAD(product, 8, '*') AS lp,
        RPAD(product, 3, '*') AS rp, REPEAT('ab', MOD(customer, 3)) AS rep, FROM_UNIXTIME(order_id * 3600) AS fu
      FROM orders WHERE order_id <= 60;`;
    const want = ORDERS.filter((o) => o.order_id <= 60).map((o) => {
      const d = new Date(o.ts);
      const m = /(b|c)(\w+)/.exec(o.product);
      return {
        order_id: o.order_id,
        y: 2026,
        q: 1,
        mo: 1,
        dom: 1,
        doy: 1,
        dow: 5,
        h: 0,
        mi: 0,
        s: d.getUTCSeconds(),
        sg: Math.sign(o.amount - 50),
        lg: Math.round(Math.log10(o.amount) * 1e6) / 1e6,
        loc: o.product.indexOf('an') + 1,
        ic: o.product[0]!.toUpperCase() + o.product.slice(1) + ' Pie',
        rev: [...o.product].reverse().join(''),
        rr: o.product.replaceAll('a', 'A'),
        rx: m ? m[2]! : null,
        part: ['a', 'b', 'c'][o.customer % 4] ?? null,
        lp: o.product.padStart(8, '*').slice(0, 8),
        rp: o.product.slice(0, 3),
        rep: 'ab'.repeat(o.customer % 3),
        fu: new Date(o.order_id * 3600 * 1000).toISOString().slice(0, 19).replace('T', ' '),
      };
    });
    sameRows((await runSql(TABLES + sql)).rows, want);
  });

  test('SELECT DISTINCT and UNION: each distinct row once', async () => {
    const rows = new Set([
      ...ORDERS.map((o) => JSON.stringify({ product: o.product, high_customer: o.customer > 10 })),
      ...ORDERS.filter((o) => o.amount > 99).map((o) => JSON.stringify({ product: o.product, high_customer: true })),
    ]);
    sameRows(
      (await runSql(golden('distinct'))).rows,
      [...rows].map((r) => JSON.parse(r) as object),
    );
  });

  test('GROUP BY without a window: updates materialized; a GROUP BY over updates retracts', async () => {
    const byProduct = [...groupBy(ORDERS, (o) => o.product).values()].map((g) => ({
      product: g[0]!.product,
      n: g.length,
      cents: g.reduce((s, o) => s + cents(o), 0),
      low: Math.min(...g.map((o) => o.amount)),
      high: Math.max(...g.map((o) => o.amount)),
      customers: new Set(g.map((o) => o.customer)).size,
    }));
    sameRows((await runSql(golden('group'))).rows, byProduct);
    const perCustomer = [...groupBy(ORDERS, (o) => String(o.customer)).values()].map((g) => ({
      placed: g.length,
      spent: g.reduce((s, o) => s + cents(o), 0),
    }));
    const nested = [...groupBy(perCustomer, (c) => String(c.placed)).values()].map((g) => ({
      orders_placed: g[0]!.placed,
      customers: g.length,
      top: Math.max(...g.map((c) => c.spent)),
    }));
    sameRows((await runSql(golden('group-nested'))).rows, nested);
  });

  test('joins: ON with pushed filters and a residual condition; FROM a, b WHERE', async () => {
    const customers = Array.from(
      { length: 20 },
      (_, i) =>
        datagenRow(
          {
            count: 20,
            seed: 3,
            fields: {
              customer_id: { kind: 'sequence', start: 1 },
              region: { kind: 'oneOf', values: ['north', 'south', 'east'] },
            },
          },
          i,
        ) as { customer_id: number; region: string },
    );
    const region = new Map(customers.map((c) => [c.customer_id, c.region]));
    const joined = ORDERS.filter(
      (o) => region.get(o.customer) === 'north' && o.amount > 95 && o.order_id % 2 === o.customer % 2,
    ).map((o) => ({ order_id: o.order_id, region: 'north', amount: o.amount }));
    sameRows((await runSql(golden('join'))).rows, joined);
    const comma = ORDERS.filter((o) => o.amount < 2).map((o) => ({
      region: region.get(o.customer)!,
      order_id: o.order_id,
    }));
    sameRows((await runSql(golden('join-comma'))).rows, comma);
  });

  test('a window keyed only by the window, UNION ALL, window rows without aggregation, folded constants', async () => {
    const windows = [...groupBy(ORDERS, (o) => String(Math.floor((o.ts - START) / 30_000))).values()].map((g) => {
      const start = START + Math.floor((g[0]!.ts - START) / 30_000) * 30_000;
      return {
        window_start: start,
        window_end: start + 30_000,
        n: g.length,
        last_order: Math.max(...g.map((o) => o.order_id)),
      };
    });
    sameRows((await runSql(golden('window-all'))).rows, windows);
    const union = [
      ...BIG.map((o) => ({ id: o.order_id, kind: 'big' })),
      ...ORDERS.filter((o) => o.product === 'apple' && o.customer === 1).map((o) => ({
        id: o.order_id,
        kind: 'apple',
      })),
    ];
    sameRows((await runSql(golden('union'))).rows, union);
    const rows = BIG.filter((o) => o.customer === 7).flatMap((o) => {
      const last = START + Math.floor((o.ts - START) / 10_000) * 10_000;
      return [last, last - 10_000].map((s) => ({ order_id: o.order_id, window_start: s, window_end: s + 20_000 }));
    });
    sameRows((await runSql(golden('window-rows'))).rows, rows);
    const constants = ORDERS.filter((o) => o.order_id <= 5).map((o) => ({
      order_id: o.order_id,
      per_hour: cents(o) * 3600,
      xy: 'xy',
    }));
    sameRows((await runSql(golden('constants'))).rows, constants);
  });
});

async function refusal(sql: string): Promise<SqlError> {
  const session = new SqlSession(await SqlCatalog.open(BUILTIN_CAPABILITIES.map((c) => c.name)));
  try {
    await session.execute(TABLES + sql, { mode: 'explain' });
  } catch (err) {
    assert.ok(err instanceof SqlError, String(err));
    return err;
  }
  assert.fail(`accepted: ${sql}`);
}

/** The 1-based byte offset of `needle` in the statement `sql` as a refusal names it (after the tables). */
const at = (sql: string, needle: string): number =>
  Buffer.byteLength(TABLES) + Buffer.byteLength(sql.slice(0, sql.indexOf(needle))) + 1;

describe('SQL binder refusals: a message naming the fault, at its byte offset', () => {
  const cases: [string, string, RegExp][] = [
    ['SELECT amout FROM orders;', 'amout', /^no column amout; the columns are order_id, customer, amount/],
    ['SELECT Amount FROM orders;', 'Amount', /names are case-sensitive: did you mean orders\.amount\?/],
    [
      "SELECT customer, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;",
      'customer',
      /column customer must be in GROUP BY or inside an aggregate/,
    ],
    ['SELECT order_id FROM orders WHERE COUNT(*) > 1;', 'COUNT', /an aggregate cannot stand in WHERE; use HAVING/],
    [
      "SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(amount), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;",
      'DESCRIPTOR',
      /DESCRIPTOR\(amount\): the column is DOUBLE, not a time attribute; declare WATERMARK FOR amount/,
    ],
    [
      "SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE nope, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;",
      'nope',
      /no table or view named nope/,
    ],
    [
      "CREATE TEMPORARY TABLE out2 (c INT, n BIGINT) WITH ('connector' = 'file', 'path' = '/tmp/x'); INSERT INTO out2 SELECT customer, COUNT(*) FROM orders GROUP BY customer;",
      'out2 SELECT',
      /INSERT INTO out2: the query's results are updates \(a GROUP BY without a window\); connector 'file' takes only appended rows/,
    ],
    [
      'SELECT c.n FROM (SELECT customer, COUNT(*) AS n FROM orders GROUP BY customer) c JOIN customers d ON c.customer = d.customer_id;',
      'JOIN customers',
      /a join over the results of a GROUP BY without a window \(updates\) is not supported yet/,
    ],
    [
      "SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start;",
      'window_start;',
      /must include window_start and window_end/,
    ],
    [
      'SELECT order_id, ROW_NUMBER() OVER (ORDER BY amount) AS rn FROM orders;',
      'ROW_NUMBER',
      /ROW_NUMBER\(\) OVER \(\.\.\.\) needs an outer WHERE rownum <= N/,
    ],
    [
      'SELECT * FROM (SELECT order_id, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY amount) AS rn FROM orders) WHERE rn <= 3;',
      'ROW_NUMBER',
      /a Top-N is supported per window/,
    ],
    [
      'SELECT order_id, SUM(amount) OVER (PARTITION BY customer ORDER BY amount) FROM orders;',
      'SUM(amount) OVER',
      /an OVER aggregation is ordered by the event-time column/,
    ],
    [
      'SELECT SUM(amount) OVER (ORDER BY ts), COUNT(*) OVER (PARTITION BY customer ORDER BY ts) FROM orders;',
      'COUNT(*) OVER',
      /share one window/,
    ],
    [
      'SELECT SUM(amount) OVER (ORDER BY ts ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING) FROM orders;',
      'SUM(amount) OVER',
      /an OVER frame/,
    ],
    ['SELECT order_id AS __proto__ FROM orders;', 'order_id AS', /the column name __proto__ is reserved/],
    [
      'SELECT DISTINCT customer FROM orders UNION SELECT 1 FROM orders WHERE product = 1;',
      '= 1;',
      /the two sides do not compare/,
    ],
    ['SELECT order_id FROM orders ORDER BY order_id;', 'order_id;', /ORDER BY on a streaming query is not supported/],
    [
      'SELECT a.order_id FROM orders a LEFT JOIN customers b ON a.customer = b.customer_id;',
      'LEFT',
      /LEFT OUTER JOIN is not supported yet/,
    ],
    [
      'SELECT a.order_id FROM orders a JOIN customers b ON a.customer > b.customer_id;',
      'JOIN customers',
      /a join needs an equality between the two sides/,
    ],
    [
      'SELECT ts FROM orders a JOIN orders b ON a.order_id = b.order_id;',
      'ts FROM',
      /^column ts is ambiguous: a\.ts or b\.ts; qualify it$/,
    ],
    [
      "SELECT order_id FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND));",
      'TABLE(SESSION',
      /SESSION\(\.\.\.\) rows are known only when a session closes/,
    ],
    [
      "SELECT COUNT(*) FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '3' SECOND, INTERVAL '4' SECOND)) GROUP BY window_start, window_end;",
      'TABLE(CUMULATE',
      /CUMULATE: the size \(4000 ms\) must be a whole number of steps \(3000 ms\)/,
    ],
    ['SELECT order_id + product FROM orders;', '+ product', /addition needs two numbers/],
  ];
  for (const [sql, where, message] of cases) {
    test(sql, async () => {
      const err = await refusal(sql);
      assert.match(err.detail, message);
      assert.equal(err.position, at(sql, where), `position of '${where}'`);
    });
  }

  test('INSERT INTO checks the column count against the table', async () => {
    const sql =
      "CREATE TEMPORARY TABLE out1 (a BIGINT, b STRING) WITH ('connector' = 'blackhole'); INSERT INTO out1 SELECT order_id FROM orders;";
    const err = await refusal(sql);
    assert.match(err.detail, /INSERT INTO out1: the query gives 1 columns \(order_id\); the table has 2 \(a, b\)/);
  });

  test('an option placeholder without a --param or default is refused, naming the parameter', async () => {
    const session = new SqlSession(await SqlCatalog.open(['datagen']));
    await assert.rejects(
      session.execute(
        "CREATE TEMPORARY TABLE t (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '${rows}'); SELECT a FROM t;",
      ),
      (err: unknown) => {
        assert.ok(err instanceof SqlError);
        assert.match(err.detail, /option 'number-of-rows' = '\$\{rows\}' needs --param rows=/);
        return true;
      },
    );
  });
});

describe('SQL connector options', () => {
  test("Flink's option names map to the connector's, each side keeps its own, datagen fills in the columns left out", async () => {
    const { connectorOptions } = await import('../../src/sql/connector-options.js');
    const kafka = {
      'properties.bootstrap.servers': 'b:9092',
      topic: 't',
      format: 'json',
      'scan.startup.mode': 'earliest-offset',
      'scan.bounded': 'true',
      'sink.delivery-guarantee': 'exactly-once',
      'sink.transactional-id-prefix': 'p',
    };
    assert.deepEqual(connectorOptions('kafka', kafka, [], 0, 'source'), {
      bootstrapServers: 'b:9092',
      topic: 't',
      valueFormat: 'json',
      startFrom: 'earliest',
      bounded: true,
    });
    assert.deepEqual(connectorOptions('kafka', kafka, [], 0, 'sink'), {
      bootstrapServers: 'b:9092',
      topic: 't',
      valueFormat: 'json',
      delivery: 'exactly-once',
      transactionalIdPrefix: 'p',
    });
    const datagen = connectorOptions(
      'datagen',
      { 'number-of-rows': '10', 'rows-per-second': '5', 'fields.a.kind': 'sequence', 'fields.b.values': 'x,y' },
      [
        { name: 'a', type: { kind: 'BIGINT', nullable: true } },
        { name: 'b', type: { kind: 'STRING', nullable: true } },
        { name: 'c', type: { kind: 'DOUBLE', nullable: true } },
      ],
      0,
      'source',
    );
    assert.deepEqual(datagen, {
      count: 10,
      rowsPerSecond: 5,
      fields: { a: { kind: 'sequence' }, b: { kind: 'oneOf', values: ['x', 'y'] }, c: { kind: 'double' } },
    });
  });
});

describe('SQL into sinks', () => {
  test("CSV file tables ('format' = 'csv'): quoted fields, empty fields as NULL, types read and written back", async () => {
    const { mkdtemp, mkdir, readdir, readFile, rm, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'clink-sql-csv-'));
    try {
      await mkdir(join(dir, 'in'));
      const input = [
        '1,Ada,"London, UK",36.5,2026-01-01 10:00:00',
        '2,"Grace ""Amazing""",,41,2026-01-02 11:30:00.250',
        '3,Linus,Helsinki,,1767225600000',
        '',
      ];
      await writeFile(join(dir, 'in', 'people.csv'), input.join('\n'));
      const text = `
        CREATE TEMPORARY TABLE people (id INT, name STRING, city STRING, score DOUBLE, seen TIMESTAMP(3)) WITH ('connector' = 'file', 'path' = '${join(dir, 'in')}', 'format' = 'csv');
        CREATE TEMPORARY TABLE out3 (id INT, name STRING, city STRING, twice DOUBLE, seen TIMESTAMP(3)) WITH ('connector' = 'file', 'path' = '${join(dir, 'out')}', 'format' = 'csv');
        INSERT INTO out3 SELECT id, UPPER(name), COALESCE(city, 'nowhere'), score * 2, seen FROM people;`;
      const session = new SqlSession(await SqlCatalog.open(BUILTIN_CAPABILITIES.map((c) => c.name)));
      const job = (await session.execute(text, { parallelism: 1 })).at(-1)!;
      if (job.kind !== 'job') return assert.fail('not a job');
      const { runJob } = await import('../../src/index.js');
      const { sqlJobDefinition } = await import('../../src/sql/index.js');
      await runJob(sqlJobDefinition({ name: job.job.name, version: '1' }, job.job.script), { parallelism: 1 });
      const files = (await readdir(join(dir, 'out'))).filter((f) => !f.startsWith('.'));
      const lines = (await Promise.all(files.map((f) => readFile(join(dir, 'out', f), 'utf8'))))
        .join('')
        .split('\n')
        .filter(Boolean)
        .sort();
      assert.deepEqual(lines, [
        '1,ADA,"London, UK",73,2026-01-01 10:00:00.000',
        '2,"GRACE ""AMAZING""",nowhere,82,2026-01-02 11:30:00.250',
        '3,LINUS,Helsinki,,2026-01-01 00:00:00.000',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('ARRAY, MAP and ROW columns: elements by position from 1, values by key, fields by name; CARDINALITY', async () => {
    const { mkdtemp, rm, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'clink-sql-nested-'));
    try {
      const records = [
        { id: 1, tags: ['red', 'big'], props: { color: 'red', size: 'L' }, pos: { x: 1, y: 2, at: { z: 9 } } },
        { id: 2, tags: [], props: {}, pos: { x: 5, y: -1, at: { z: 0 } } },
        { id: 3, tags: ['blue'], props: { size: 'S' }, pos: null },
      ];
      await writeFile(join(dir, 'things.jsonl'), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
      const { rows } = await runSql(`
        CREATE TEMPORARY TABLE things (id INT, tags ARRAY<STRING>, props MAP<STRING, STRING>, pos ROW<x INT, y INT, at ROW<z INT>>)
          WITH ('connector' = 'file', 'path' = '${join(dir, 'things.jsonl')}');
        SELECT id, tags[1] AS first_tag, tags[2] AS second_tag, CARDINALITY(tags) AS n, props['size'] AS size, pos.x + pos.y AS sum, t.pos.at.z AS z
        FROM things t;`);
      sameRows(rows, [
        { id: 1, first_tag: 'red', second_tag: 'big', n: 2, size: 'L', sum: 3, z: 9 },
        { id: 2, first_tag: null, second_tag: null, n: 0, size: null, sum: 4, z: 0 },
        { id: 3, first_tag: 'blue', second_tag: null, n: 1, size: 'S', sum: null, z: null },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('EXECUTE STATEMENT SET: two INSERTs into file tables run as one job; each file holds its rows as JSON lines', async () => {
    const { mkdtemp, readdir, readFile, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'clink-sql-sink-'));
    try {
      const text = `${TABLES}
        CREATE TEMPORARY TABLE big (order_id BIGINT, amount DOUBLE) WITH ('connector' = 'file', 'path' = '${join(dir, 'big')}');
        CREATE TEMPORARY TABLE per_window (customer INT, wend TIMESTAMP(3), n BIGINT) WITH ('connector' = 'file', 'path' = '${join(dir, 'windows')}');
        EXECUTE STATEMENT SET BEGIN
          INSERT INTO big SELECT order_id, amount FROM orders WHERE amount > 90;
          INSERT INTO per_window SELECT customer, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '30' SECOND)) GROUP BY customer, window_start, window_end;
        END;`;
      const session = new SqlSession(await SqlCatalog.open(BUILTIN_CAPABILITIES.map((c) => c.name)));
      const results = await session.execute(text, { parallelism: 2 });
      const job = results.at(-1)!;
      assert.equal(job.kind, 'job');
      if (job.kind !== 'job') return;
      assert.match(job.job.explain, /Sink\(table=\[big\], connector=\[file\]/);
      assert.match(job.job.explain, /Sink\(table=\[per_window\], connector=\[file\]/);
      const { runJob } = await import('../../src/index.js');
      const { sqlJobDefinition } = await import('../../src/sql/index.js');
      await runJob(sqlJobDefinition({ name: job.job.name, version: '1' }, job.job.script), { parallelism: 2 });
      const lines = async (sub: string): Promise<object[]> => {
        const files = (await readdir(join(dir, sub))).filter((f) => f.endsWith('.jsonl'));
        const text = (await Promise.all(files.map((f) => readFile(join(dir, sub, f), 'utf8')))).join('');
        return text
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as object);
      };
      sameRows(
        await lines('big'),
        BIG.map((o) => ({ order_id: o.order_id, amount: o.amount })),
      );
      const windows = [...groupBy(ORDERS, (o) => `${o.customer}/${Math.floor((o.ts - START) / 30_000)}`).values()].map(
        (g) => ({
          customer: g[0]!.customer,
          wend: START + (Math.floor((g[0]!.ts - START) / 30_000) + 1) * 30_000,
          n: g.length,
        }),
      );
      sameRows(await lines('windows'), windows);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
