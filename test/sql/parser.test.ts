// The SQL parser: Flink SQL's statements parse to the expected trees, errors name their byte offset,
// and printing a tree then parsing it gives the same tree (a property test over generated trees).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  MAX_NESTING,
  parseExpression,
  parseSql,
  printExpr,
  printStatement,
  SqlError,
  type Expr,
  type Statement,
} from '../../src/sql/index.js';

/** A tree without its offsets, to compare a reparsed tree with the original. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => k !== 'at')
        .map(([k, v]) => [k, shape(v)]),
    );
  return value;
}

const one = (sql: string): Statement => {
  const all = parseSql(sql);
  assert.equal(all.length, 1, sql);
  return all[0]!;
};

describe('SQL parser', () => {
  test('CREATE TABLE with computed columns, a watermark, a primary key and connector options', () => {
    const s = one(`CREATE TABLE bids (
      auction BIGINT, price BIGINT NOT NULL, ts TIMESTAMP(3), doubled AS price * 2,
      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (auction) NOT ENFORCED
    ) WITH ('connector' = 'nexmark', 'events' = '1000')`);
    assert.equal(s.kind, 'createTable');
    if (s.kind !== 'createTable') return;
    assert.deepEqual(
      s.columns.map((c) => [c.name, c.type?.name ?? 'computed', c.notNull]),
      [
        ['auction', 'BIGINT', false],
        ['price', 'BIGINT', true],
        ['ts', 'TIMESTAMP', false],
        ['doubled', 'computed', false],
      ],
    );
    assert.equal(s.watermark?.column, 'ts');
    assert.equal(printExpr(s.watermark!.expr), "(ts - INTERVAL '5' SECOND)");
    assert.deepEqual(s.primaryKey, ['auction']);
    assert.deepEqual(s.options, [
      { key: 'connector', value: 'nexmark' },
      { key: 'events', value: '1000' },
    ]);
  });

  test('windowing table functions, OVER, joins and the statement kinds print back as written', () => {
    const cases = [
      "SELECT auction, window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end",
      "SELECT * FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))",
      'SELECT a, ROW_NUMBER() OVER (PARTITION BY window_start ORDER BY price DESC) AS rn FROM t',
      "SELECT SUM(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) FROM t",
      'SELECT p.name, a.id FROM person AS p INNER JOIN auction AS a ON (p.id = a.seller)',
      'SELECT a FROM t, u WHERE (t.id = u.id)',
      'SELECT COUNT(DISTINCT bidder) FROM bids',
      'CREATE TEMPORARY VIEW v AS SELECT a FROM t',
      'DROP TABLE IF EXISTS t',
      'ALTER TABLE t RENAME TO u',
      'SHOW TABLES',
      'DESCRIBE t',
      'EXPLAIN INSERT INTO out SELECT * FROM t',
      'EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT * FROM t; INSERT INTO b SELECT * FROM t; END',
      'SELECT a FROM t UNION ALL SELECT b FROM u ORDER BY a LIMIT 3',
      "SELECT key, timestamp FROM t WHERE (ts > TIMESTAMP '2020-01-01 00:00:00')",
      'SELECT `select`, `my col` FROM `order`',
      "SET 'execution.checkpointing.timeout' = '30 s'",
      'SET',
      "RESET 'execution.checkpointing.timeout'",
      'RESET',
    ];
    for (const sql of cases) assert.equal(printStatement(one(sql)), sql);
    // SET and RESET stay names where a name is expected.
    assert.equal(printStatement(one('SELECT set, reset FROM t')), 'SELECT set, reset FROM t');
  });

  test('parentheses nested past MAX_NESTING are refused before parsing, at the first one too deep', () => {
    const nested = (n: number): string => `SELECT ${'('.repeat(n)}a${')'.repeat(n)} FROM t`;
    assert.doesNotThrow(() => parseSql(nested(MAX_NESTING)));
    const text = nested(MAX_NESTING + 1);
    assert.throws(
      () => parseSql(text),
      (err: unknown) =>
        err instanceof SqlError &&
        /nests too deeply/.test(err.message) &&
        err.position === 'SELECT '.length + MAX_NESTING + 1,
    );
  });

  test('precedence: OR below AND below NOT below comparison below + below *, unary minus tightest', () => {
    assert.equal(
      printExpr(parseExpression('NOT a OR b AND c = 1 + 2 * -3')),
      '((NOT a) OR (b AND (c = (1 + (2 * (-3))))))',
    );
    assert.equal(
      printExpr(parseExpression("x NOT BETWEEN 1 AND 2 AND y IN (1, 2) AND z IS NOT NULL AND w NOT LIKE 'a%'")),
      "((((x NOT BETWEEN 1 AND 2) AND (y IN (1, 2))) AND (z IS NOT NULL)) AND (w NOT LIKE 'a%'))",
    );
    assert.equal(
      printExpr(parseExpression("CASE WHEN a > 1 THEN 'x' ELSE CAST(b AS DECIMAL(10, 2)) END")),
      "CASE WHEN (a > 1) THEN 'x' ELSE CAST(b AS DECIMAL(10, 2)) END",
    );
  });

  test('an error names what was expected and its 1-based byte offset, with a caret excerpt', () => {
    const at = (sql: string): SqlError => {
      try {
        parseSql(sql);
      } catch (err) {
        assert.ok(err instanceof SqlError, String(err));
        return err;
      }
      assert.fail(`parsed: ${sql}`);
    };
    const trailing = at('SELECT a FROM t WHERE');
    assert.equal(trailing.position, 22);
    assert.equal(trailing.message, 'unexpected end of the statement (at byte 22)');
    const comma = at('SELECT a, FROM t');
    assert.equal(comma.position, 11);
    assert.equal(comma.excerpt(), 'SELECT a, FROM t\n          ^');
    // Offsets count bytes: the two-byte 'é' moves the position by 2 although it is one character.
    assert.equal(at("SELECT 'é', FROM t").position, 14);
    assert.match(at('SELECT CAST(x AS FOO) FROM t').message, /^unknown type 'FOO'; use INT, BIGINT/);
    assert.match(at("SELECT INTERVAL '1' WEEK FROM t").message, /^unknown interval unit 'WEEK'; use SECOND/);
    assert.equal(at('SELECT a FROM t #').message, "unexpected character '#' (at byte 17)");
  });

  test('property: printing a generated expression and parsing it again gives the same tree', () => {
    const ident = fc.constantFrom('a', 'b', 'price', 'key', 'timestamp', 'select', 'my col');
    const leaf: fc.Arbitrary<Expr> = fc.oneof(
      ident.map((n): Expr => ({ kind: 'column', name: { kind: 'name', parts: [n], at: 0 }, at: 0 })),
      fc.nat(10_000).map((n): Expr => ({ kind: 'number', text: String(n), at: 0 })),
      fc.string({ maxLength: 6 }).map((v): Expr => ({ kind: 'string', value: v, at: 0 })),
      fc.boolean().map((v): Expr => ({ kind: 'boolean', value: v, at: 0 })),
      fc.constant<Expr>({ kind: 'null', at: 0 }),
      fc
        .tuple(fc.nat(100), fc.constantFrom('SECOND', 'MINUTE', 'HOUR', 'DAY') as fc.Arbitrary<'SECOND'>)
        .map(([n, unit]): Expr => ({ kind: 'interval', value: String(n), unit, at: 0 })),
    );
    const { expr } = fc.letrec<{ expr: Expr }>((tie) => ({
      expr: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc.record({
          kind: fc.constant('binary' as const),
          op: fc.constantFrom('OR', 'AND', '=', '<>', '<', '<=', '+', '-', '*', '/', '%', '||') as fc.Arbitrary<'OR'>,
          left: tie('expr'),
          right: tie('expr'),
          at: fc.constant(0),
        }),
        fc.record({
          kind: fc.constant('unary' as const),
          op: fc.constantFrom('-', 'NOT') as fc.Arbitrary<'-'>,
          operand: tie('expr'),
          at: fc.constant(0),
        }),
        fc.record({
          kind: fc.constant('isNull' as const),
          operand: tie('expr'),
          negated: fc.boolean(),
          at: fc.constant(0),
        }),
        fc.record({
          kind: fc.constant('between' as const),
          operand: tie('expr'),
          low: tie('expr'),
          high: tie('expr'),
          negated: fc.boolean(),
          at: fc.constant(0),
        }),
        fc.record({
          kind: fc.constant('in' as const),
          operand: tie('expr'),
          list: fc.array(tie('expr'), { minLength: 1, maxLength: 3 }),
          negated: fc.boolean(),
          at: fc.constant(0),
        }),
        fc.record({
          kind: fc.constant('call' as const),
          name: fc.constantFrom('COUNT', 'UPPER', 'COALESCE'),
          args: fc.array(tie('expr'), { maxLength: 3 }),
          distinct: fc.boolean(),
          at: fc.constant(0),
        }),
        fc.record({
          kind: fc.constant('case' as const),
          whens: fc.array(fc.record({ when: tie('expr'), then: tie('expr') }), { minLength: 1, maxLength: 2 }),
          at: fc.constant(0),
        }),
      ),
    }));
    fc.assert(
      fc.property(expr, (e) => {
        const printed = printExpr(e);
        assert.deepEqual(shape(parseExpression(printed)), shape(e), printed);
      }),
      { numRuns: 500 },
    );
  });
});
