-- SELECT DISTINCT and a distinct UNION: each distinct row once (a GROUP BY of every column).
SELECT DISTINCT product, customer > 10 AS high_customer FROM orders
UNION
SELECT product, TRUE FROM orders WHERE amount > 99;
