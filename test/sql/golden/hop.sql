-- A HOP window over a view, keyed by an expression, with arithmetic over aggregates.
SELECT MOD(customer, 3) AS bucket, window_end, COUNT(*) * 10 AS tens, ROUND(SUM(amount), 2) AS total
FROM TABLE(HOP(TABLE big_orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '20' SECOND))
GROUP BY MOD(customer, 3), window_start, window_end;
