-- GROUP BY without a window: the results are updates, materialized when the input ends.
SELECT product, COUNT(*) AS n, SUM(amount_cents) AS cents, MIN(amount) AS low, MAX(amount) AS high, COUNT(DISTINCT customer) AS customers
FROM orders
GROUP BY product;
