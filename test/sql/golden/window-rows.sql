-- A windowing TVF read without aggregation: each row once per HOP window it falls in.
SELECT order_id, window_start, window_end
FROM TABLE(HOP(TABLE big_orders, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '20' SECOND))
WHERE customer = 7;
