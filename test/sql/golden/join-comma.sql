-- FROM a, b WHERE a.k = b.k is the same inner join.
SELECT c.region, o.order_id FROM customers c, orders o WHERE c.customer_id = o.customer AND o.amount < 2;
