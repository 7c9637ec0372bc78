-- Projection and filter with expressions: pushed into the scan, computed columns inlined.
SELECT order_id, UPPER(product) AS product, amount_cents, amount_cents / 7 AS sevenths,
       CASE WHEN amount >= 50 THEN 'high' ELSE 'low' END AS band,
       CAST(customer AS STRING) || '-' || product AS tag
FROM orders
WHERE customer BETWEEN 3 AND 5 AND product LIKE '%an%' AND NOT (order_id IN (10, 20, 30));
