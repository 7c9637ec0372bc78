-- Nexmark q2, selection: the bids on every 123rd auction (the suite's text).
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
