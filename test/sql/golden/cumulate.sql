-- CUMULATE windows: in each 30-second period, the running count and total at every 10-second step.
SELECT window_start, window_end, COUNT(*) AS n, SUM(amount_cents) AS cents
FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '30' SECOND))
GROUP BY window_start, window_end;
