-- The Nexmark source as tables and views, after the public Nexmark suite's ddl: one table of events and
-- a view per kind. Adapted: clink's nexmark connector gives flat rows with a `kind` column ('person',
-- 'auction', 'bid') where the suite's generator gives event_type and nested ROW columns, so the views
-- filter on kind and pick the columns of their kind. Options come from --param (defaults after ':').
CREATE TEMPORARY TABLE nexmark (
  kind STRING,
  id BIGINT,
  name STRING,
  emailAddress STRING,
  creditCard STRING,
  city STRING,
  state STRING,
  itemName STRING,
  description STRING,
  initialBid BIGINT,
  reserve BIGINT,
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  url STRING,
  dateTime TIMESTAMP(3),
  extra STRING,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
  'connector' = 'nexmark',
  'events' = '${events:1000000}',
  'seed' = '${seed:0}',
  'events-per-second' = '${eventsPerSecond:10000}'
);

CREATE TEMPORARY VIEW person AS
SELECT id, name, emailAddress, creditCard, city, state, dateTime, extra FROM nexmark WHERE kind = 'person';

CREATE TEMPORARY VIEW auction AS
SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra FROM nexmark WHERE kind = 'auction';

CREATE TEMPORARY VIEW bid AS
SELECT auction, bidder, price, channel, url, dateTime, extra FROM nexmark WHERE kind = 'bid';
