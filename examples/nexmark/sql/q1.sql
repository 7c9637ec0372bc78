-- Nexmark q1, currency conversion: each bid's price in euros (the suite's text).
SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid;
