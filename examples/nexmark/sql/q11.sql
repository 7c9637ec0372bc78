-- Nexmark q11, user sessions: bids per bidder and session (a 10-second gap). The suite writes it with
-- GROUP BY SESSION(dateTime, ...) and SESSION_START/SESSION_END; here the same query in the
-- windowing-TVF form Flink recommends (the suite's form is not supported).
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
