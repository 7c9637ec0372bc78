-- Window Top-N: the two customers with the largest order totals in each 30-second window.
SELECT customer, window_end, total, rn
FROM (
  SELECT customer, window_end, total,
         ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY total DESC, customer) AS rn
  FROM (
    SELECT customer, window_start, window_end, SUM(amount_cents) AS total
    FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '30' SECOND))
    GROUP BY customer, window_start, window_end
  )
)
WHERE rn <= 2;
