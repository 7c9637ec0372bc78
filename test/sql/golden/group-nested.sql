-- A GROUP BY over another's updates: how many customers placed each number of orders, and the most
-- any of them spent (COUNT and MAX retract as a customer moves from one count to the next).
SELECT orders_placed, COUNT(*) AS customers, MAX(spent) AS top
FROM (SELECT customer, COUNT(*) AS orders_placed, SUM(amount_cents) AS spent FROM orders GROUP BY customer) c
GROUP BY orders_placed;
