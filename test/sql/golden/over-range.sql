-- An OVER frame of time: each big order with how many big orders its customer placed in the 20 seconds up to it.
SELECT order_id, customer,
       COUNT(*) OVER (PARTITION BY customer ORDER BY ts RANGE BETWEEN INTERVAL '20' SECOND PRECEDING AND CURRENT ROW) AS recent
FROM big_orders;
