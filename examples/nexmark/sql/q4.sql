-- Nexmark q4, average price per category: the winning (highest) bid of each auction within its
-- lifetime, averaged per category (the suite's text). Both GROUP BYs are without a window, so the
-- results are updates: each auction's maximum rises as bids come, and the averages follow it.
SELECT Q.category, AVG(Q.final) AS avgPrice
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
