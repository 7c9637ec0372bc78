-- Nexmark q12, processing-time windows: bids per bidder in 10-second windows of processing time. The
-- suite groups by TUMBLE(p_time, ...) over (SELECT *, PROCTIME() AS p_time FROM bid); here the
-- windowing-TVF form, whose TABLE argument is a view.
CREATE TEMPORARY VIEW bid_proctime AS SELECT *, PROCTIME() AS p_time FROM bid;

SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(TUMBLE(TABLE bid_proctime, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
