-- Sums that legal input can reach fit their columns.
--
-- runs.estimated_cost: a step costs at most 1,000,000 and a run holds at most
-- 2,147,483,647 steps (sequence is a 32-bit integer), so a run costs less than
-- 2.2e15: numeric(22, 6) holds up to 1e16 at the same six decimals. Raising the
-- precision of a numeric at the same scale rewrites no row.
--
-- tool_outcome_daily: a day, server and tool could pass 2,147,483,647 calls
-- (about 25,000 a second); the counts and the duration histogram become bigint.
-- This rewrites the rollup (one row per day, server and tool), under a lock
-- that makes tool-step writes wait for it; lock_timeout makes the migration
-- give up rather than queue behind a long transaction.
SET LOCAL lock_timeout = '5s';

ALTER TABLE runs ALTER COLUMN estimated_cost TYPE numeric(22, 6);

ALTER TABLE tool_outcome_daily
  ALTER COLUMN ok TYPE bigint,
  ALTER COLUMN failed TYPE bigint,
  ALTER COLUMN cancelled TYPE bigint,
  ALTER COLUMN d0 TYPE bigint,
  ALTER COLUMN d1 TYPE bigint,
  ALTER COLUMN d2 TYPE bigint,
  ALTER COLUMN d3 TYPE bigint,
  ALTER COLUMN d4 TYPE bigint,
  ALTER COLUMN d5 TYPE bigint,
  ALTER COLUMN d6 TYPE bigint,
  ALTER COLUMN d7 TYPE bigint,
  ALTER COLUMN d8 TYPE bigint,
  ALTER COLUMN d9 TYPE bigint,
  ALTER COLUMN d10 TYPE bigint,
  ALTER COLUMN d11 TYPE bigint,
  ALTER COLUMN d12 TYPE bigint,
  ALTER COLUMN d13 TYPE bigint,
  ALTER COLUMN d14 TYPE bigint,
  ALTER COLUMN d15 TYPE bigint,
  ALTER COLUMN d16 TYPE bigint,
  ALTER COLUMN d17 TYPE bigint,
  ALTER COLUMN d18 TYPE bigint,
  ALTER COLUMN d19 TYPE bigint,
  ALTER COLUMN d20 TYPE bigint,
  ALTER COLUMN d21 TYPE bigint,
  ALTER COLUMN d22 TYPE bigint,
  ALTER COLUMN d23 TYPE bigint,
  ALTER COLUMN d24 TYPE bigint,
  ALTER COLUMN d25 TYPE bigint,
  ALTER COLUMN d26 TYPE bigint,
  ALTER COLUMN d27 TYPE bigint,
  ALTER COLUMN d28 TYPE bigint,
  ALTER COLUMN d29 TYPE bigint,
  ALTER COLUMN d30 TYPE bigint,
  ALTER COLUMN d31 TYPE bigint,
  ALTER COLUMN d32 TYPE bigint,
  ALTER COLUMN d33 TYPE bigint,
  ALTER COLUMN d34 TYPE bigint,
  ALTER COLUMN d35 TYPE bigint,
  ALTER COLUMN d36 TYPE bigint,
  ALTER COLUMN d37 TYPE bigint,
  ALTER COLUMN d38 TYPE bigint,
  ALTER COLUMN d39 TYPE bigint,
  ALTER COLUMN d40 TYPE bigint,
  ALTER COLUMN d41 TYPE bigint,
  ALTER COLUMN d42 TYPE bigint,
  ALTER COLUMN d43 TYPE bigint,
  ALTER COLUMN d44 TYPE bigint,
  ALTER COLUMN d45 TYPE bigint,
  ALTER COLUMN d46 TYPE bigint,
  ALTER COLUMN d47 TYPE bigint,
  ALTER COLUMN d48 TYPE bigint,
  ALTER COLUMN d49 TYPE bigint,
  ALTER COLUMN d50 TYPE bigint,
  ALTER COLUMN d51 TYPE bigint,
  ALTER COLUMN d52 TYPE bigint,
  ALTER COLUMN d53 TYPE bigint,
  ALTER COLUMN d54 TYPE bigint,
  ALTER COLUMN d55 TYPE bigint,
  ALTER COLUMN d56 TYPE bigint,
  ALTER COLUMN d57 TYPE bigint,
  ALTER COLUMN d58 TYPE bigint,
  ALTER COLUMN d59 TYPE bigint,
  ALTER COLUMN d60 TYPE bigint,
  ALTER COLUMN d61 TYPE bigint,
  ALTER COLUMN d62 TYPE bigint,
  ALTER COLUMN d63 TYPE bigint,
  ALTER COLUMN d64 TYPE bigint;
