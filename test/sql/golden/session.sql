-- SESSION windows per customer (a 3-second gap) over the big orders.
SELECT customer, COUNT(*) AS n, window_start, window_end
FROM TABLE(SESSION(TABLE big_orders, DESCRIPTOR(ts), INTERVAL '3' SECOND))
GROUP BY customer, window_start, window_end;
