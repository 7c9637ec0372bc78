-- OVER aggregations from the first row: each customer's running order count and total, in event time.
SELECT order_id, customer,
       COUNT(*) OVER (PARTITION BY customer ORDER BY ts) AS orders_so_far,
       SUM(amount_cents) OVER (PARTITION BY customer ORDER BY ts) AS spent_so_far
FROM orders;
