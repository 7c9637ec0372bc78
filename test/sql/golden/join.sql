-- A regular inner join: filters on one side are pushed to that side, the rest is checked per joined row.
SELECT o.order_id, c.region, o.amount
FROM orders o JOIN customers c ON o.customer = c.customer_id
WHERE c.region = 'north' AND o.amount > 95 AND o.order_id % 2 = c.customer_id % 2;
