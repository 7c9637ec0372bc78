-- UNION ALL of two queries with different column names: the right takes the left's.
SELECT order_id AS id, 'big' AS kind FROM big_orders
UNION ALL
SELECT order_id, 'apple' FROM orders WHERE product = 'apple' AND customer = 1;
