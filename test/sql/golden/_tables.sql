-- The tables every golden query reads (prepended by golden.test.ts): generated, seeded, bounded.
CREATE TEMPORARY TABLE orders (
  order_id BIGINT,
  customer INT,
  amount DOUBLE,
  product STRING,
  ts TIMESTAMP(3),
  amount_cents AS CAST(amount * 100 AS BIGINT),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '2000',
  'seed' = '7',
  'fields.order_id.kind' = 'sequence',
  'fields.order_id.start' = '1',
  'fields.customer.min' = '1',
  'fields.customer.max' = '20',
  'fields.amount.min' = '1',
  'fields.amount.max' = '100',
  'fields.product.values' = 'apple,banana,cherry,durian',
  'fields.ts.kind' = 'timestamp',
  'fields.ts.start-ms' = '1767225600000',
  'fields.ts.step-ms' = '50'
);

CREATE TEMPORARY VIEW big_orders AS SELECT order_id, customer, amount, ts FROM orders WHERE amount > 90;

CREATE TEMPORARY TABLE customers (
  customer_id INT,
  region STRING
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '20',
  'seed' = '3',
  'fields.customer_id.kind' = 'sequence',
  'fields.customer_id.start' = '1',
  'fields.region.values' = 'north,south,east'
);
