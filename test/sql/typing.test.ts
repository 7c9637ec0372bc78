// Expression types: columns resolve against the FROM scope, operators and functions are checked, and a
// refusal names the node and the types involved.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseExpression, SqlError } from '../../src/sql/index.js';
import { typeName } from '../../src/sql/types.js';
import { typeOf, type Scope } from '../../src/sql/typing.js';

const scope: Scope = [
  { qualifier: 'b', name: 'auction', type: { kind: 'BIGINT', nullable: false } },
  { qualifier: 'b', name: 'price', type: { kind: 'INT', nullable: true } },
  { qualifier: 'b', name: 'ts', type: { kind: 'TIMESTAMP', precision: 3, nullable: false, rowtime: true } },
  { qualifier: 'b', name: 'extra', type: { kind: 'STRING', nullable: true } },
  { qualifier: 'p', name: 'id', type: { kind: 'BIGINT', nullable: false } },
  { qualifier: 'a', name: 'id', type: { kind: 'BIGINT', nullable: false } },
  { qualifier: 'a', name: 'reserve', type: { kind: 'DECIMAL', precision: 10, scale: 2, nullable: false } },
];

const type = (sql: string): string => typeName(typeOf(parseExpression(sql), scope));
function refusal(sql: string): SqlError {
  try {
    typeOf(parseExpression(sql), scope);
  } catch (err) {
    assert.ok(err instanceof SqlError, String(err));
    return err;
  }
  assert.fail(`typed: ${sql}`);
}

describe('SQL expression types', () => {
  test('columns, literals, arithmetic widening, comparisons, time and intervals, nullability', () => {
    assert.equal(type('auction'), 'BIGINT NOT NULL');
    assert.equal(type('b.price'), 'INT');
    assert.equal(type('price * 2'), 'INT');
    assert.equal(type('auction + price'), 'BIGINT');
    assert.equal(type('a.reserve * 2'), 'DECIMAL(10, 2) NOT NULL');
    assert.equal(type('price * 0.908'), 'DOUBLE');
    assert.equal(type("ts - INTERVAL '5' SECOND"), 'TIMESTAMP(3) *ROWTIME* NOT NULL');
    assert.equal(type('auction > 10 AND price IS NOT NULL'), 'BOOLEAN NOT NULL');
    assert.equal(type('price BETWEEN 1 AND 10'), 'BOOLEAN');
    assert.equal(type("extra LIKE 'a%' OR extra || 'x' = 'y'"), 'BOOLEAN');
    assert.equal(type('CASE WHEN price > 1 THEN auction ELSE 0 END'), 'BIGINT NOT NULL');
    assert.equal(type('CASE WHEN price > 1 THEN auction END'), 'BIGINT');
    assert.equal(type('CAST(price AS DOUBLE)'), 'DOUBLE');
  });

  test('functions and aggregates: argument checks and result types', () => {
    assert.equal(type('COUNT(*)'), 'BIGINT NOT NULL');
    assert.equal(type('SUM(price)'), 'BIGINT');
    assert.equal(type('AVG(price)'), 'DOUBLE');
    assert.equal(type('MAX(a.reserve)'), 'DECIMAL(10, 2)');
    assert.equal(type('COALESCE(price, 0)'), 'INT NOT NULL');
    assert.equal(type('UPPER(extra)'), 'STRING');
    assert.equal(type('CURRENT_WATERMARK(ts)'), 'TIMESTAMP(3) *ROWTIME*');
    assert.equal(refusal('SUM(extra)').detail, 'SUM: argument 1 (extra) is STRING; it must be numeric');
    assert.equal(refusal('UPPER(extra, 1)').detail, 'UPPER takes 1 argument, not 2');
    assert.match(refusal('SHOUT(extra)').detail, /^no function SHOUT; the functions are ABS, AVG, /);
    assert.match(
      refusal('CURRENT_WATERMARK(auction)').detail,
      /must be an event-time attribute \(a column with WATERMARK FOR\)$/,
    );
  });

  test('refusals name the node, the types, and for a missing column what was meant', () => {
    assert.equal(refusal('id').detail, 'column id is ambiguous: p.id or a.id; qualify it');
    assert.equal(refusal('Price').detail, 'no column Price (names are case-sensitive: did you mean b.price?)');
    const missing = refusal('auction + bidder');
    assert.equal(missing.detail, 'no column bidder; the columns are auction, price, ts, extra, id, id, reserve');
    assert.equal(missing.offset, 10);
    assert.equal(
      refusal('extra + 1').detail,
      '(extra + 1): addition needs two numbers, or a time and an interval (STRING + INT NOT NULL)',
    );
    assert.equal(
      refusal("auction = 'x'").detail,
      "(auction = 'x'): the two sides do not compare (BIGINT NOT NULL = STRING NOT NULL)",
    );
    assert.equal(refusal('price AND TRUE').detail, 'AND needs a condition; price is INT');
    assert.equal(
      refusal("CASE WHEN price > 1 THEN 'x' ELSE 1 END").detail,
      'CASE: its results have no common type (STRING NOT NULL, INT NOT NULL)',
    );
  });
});
