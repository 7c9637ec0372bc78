-- A TUMBLE window aggregation with every aggregate, HAVING and renamed window columns.
SELECT customer, window_start AS wstart, window_end AS wend, COUNT(*) AS orders, SUM(amount_cents) AS cents,
       MIN(amount) AS smallest, MAX(amount) AS largest, AVG(amount) AS mean, COUNT(DISTINCT product) AS products
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY customer, window_start, window_end
HAVING COUNT(*) > 8;
