-- Constant folding: the arithmetic on literals is done once at plan time.
SELECT order_id, amount_cents * (60 * 60) AS per_hour, 'x' || 'y' AS xy FROM orders WHERE order_id <= 2 + 3;
