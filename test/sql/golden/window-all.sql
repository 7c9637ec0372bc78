-- A window with no key but the window: every row of a window meets on one key.
SELECT window_start, window_end, COUNT(*) AS n, MAX(order_id) AS last_order
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '30' SECOND))
GROUP BY window_start, window_end;
