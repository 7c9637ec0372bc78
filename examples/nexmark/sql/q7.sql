-- Nexmark q7, highest bid: the bids with the highest price of each 10-second window (the suite's
-- text, with the windowing-TVF form of its window). A regular join on price, checked against the window.
SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
FROM bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS dateTime
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime;
