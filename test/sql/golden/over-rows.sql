-- An OVER frame of rows: each order with the largest and mean amount of its customer's last three orders.
SELECT order_id, customer,
       MAX(amount) OVER (PARTITION BY customer ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS largest_of_3,
       AVG(amount) OVER (PARTITION BY customer ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS mean_of_3
FROM orders;
