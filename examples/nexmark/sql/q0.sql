-- Nexmark q0, pass-through: every bid, projected (the suite's text; results to the client).
SELECT auction, bidder, price, dateTime, extra FROM bid;
