-- Counts (no histograms) per week, owner, configuration, server and tool:
--
--   tool_outcome_weekly  (week, owner, configuration, server, tool)
--
-- A ranking's first pass by all four fields, by owner x server x tool or by
-- configuration x server x tool, which no narrower weekly rollup answers,
-- summed a range's whole weeks from the daily rollup keyed by every field:
-- 30 days on 40 owners, 20 servers of 10 tools are 188,000 daily rows and
-- 72,000 weekly ones (a key with calls on most days of a week is one row, not
-- seven). It keeps no histograms: those of the groups a ranking returns are
-- read from the daily rollup's durations, one index range a group (0033,
-- 0034), so a new key of a week writes one row and one index entry. Weeks
-- start on Monday, 00:00 UTC, as in migration 0020. Kept exact in the same
-- transaction as every write: tool_outcome_rollups_add adds the calls a
-- statement touched to all twenty-six rollups.
SET LOCAL lock_timeout = '5s';
-- No write may be counted into the old rollups only.
LOCK TABLE runs, run_steps IN SHARE MODE;

CREATE TABLE tool_outcome_weekly (
  week date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint NOT NULL DEFAULT 0,
  failed bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0,
  CONSTRAINT tool_outcome_weekly_pkey PRIMARY KEY (week, owner, configuration, server, tool_name),
  -- ISO day of week 1: a Monday, the first day of a week.
  CONSTRAINT tool_outcome_weekly_monday CHECK (extract(isodow FROM week) = 1)
);

-- Adds signed cells to every rollup, each in the order of its key, the
-- rollups always in the same order, so concurrent writers do not lock rows
-- crosswise. Rows that fall to zero stay: a later call on the same key reuses them.
CREATE OR REPLACE FUNCTION tool_outcome_rollups_add(cells tool_call_cell[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF cells IS NULL OR cardinality(cells) = 0 THEN
    RETURN;
  END IF;

  INSERT INTO tool_outcome_daily (day, server, tool_name, ok, failed, cancelled, durations)
  SELECT day, server, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.server, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, server, tool_name
   ORDER BY day, server, tool_name
  ON CONFLICT (day, server, tool_name) DO UPDATE SET
    ok = tool_outcome_daily.ok + excluded.ok,
    failed = tool_outcome_daily.failed + excluded.failed,
    cancelled = tool_outcome_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_daily (day, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.tool_name,
         sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (day, owner, configuration, server, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_daily.ok + excluded.ok,
    failed = tool_outcome_owner_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_daily.cancelled + excluded.cancelled;

  -- A zero sum changes no row: none is written for it.
  INSERT INTO tool_outcome_owner_daily_durations (day, owner, configuration, server, tool_name, duration_bucket, calls)
  SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.tool_name, c.b::smallint,
         sum(c.ok + c.failed + c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5, 6
  HAVING sum(c.ok + c.failed + c.cancelled) <> 0
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (day, owner, configuration, server, tool_name, duration_bucket) DO UPDATE SET
    calls = tool_outcome_owner_daily_durations.calls + excluded.calls;

  INSERT INTO tool_outcome_hourly (hour, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT c.hour AS hour, c.owner, c.configuration, c.server, c.tool_name,
         sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (hour, owner, configuration, server, tool_name) DO UPDATE SET
    ok = tool_outcome_hourly.ok + excluded.ok,
    failed = tool_outcome_hourly.failed + excluded.failed,
    cancelled = tool_outcome_hourly.cancelled + excluded.cancelled;

  -- A zero sum changes no row: none is written for it.
  INSERT INTO tool_outcome_hourly_durations (hour, owner, configuration, server, tool_name, duration_bucket, calls)
  SELECT c.hour AS hour, c.owner, c.configuration, c.server, c.tool_name, c.b::smallint,
         sum(c.ok + c.failed + c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5, 6
  HAVING sum(c.ok + c.failed + c.cancelled) <> 0
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (hour, owner, configuration, server, tool_name, duration_bucket) DO UPDATE SET
    calls = tool_outcome_hourly_durations.calls + excluded.calls;

  INSERT INTO tool_outcome_server_daily (day, server, ok, failed, cancelled, durations)
  SELECT day, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY day, server
   ORDER BY day, server
  ON CONFLICT (day, server) DO UPDATE SET
    ok = tool_outcome_server_daily.ok + excluded.ok,
    failed = tool_outcome_server_daily.failed + excluded.failed,
    cancelled = tool_outcome_server_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_server_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_daily (day, owner, configuration, ok, failed, cancelled, durations)
  SELECT day, owner, configuration, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, owner, configuration
   ORDER BY day, owner, configuration
  ON CONFLICT (day, owner, configuration) DO UPDATE SET
    ok = tool_outcome_owner_configuration_daily.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_tool_daily (day, owner, tool_name, ok, failed, cancelled, durations)
  SELECT day, owner, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, owner, tool_name
   ORDER BY day, owner, tool_name
  ON CONFLICT (day, owner, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_tool_daily.ok + excluded.ok,
    failed = tool_outcome_owner_tool_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_tool_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_tool_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_server_daily (day, owner, configuration, server, ok, failed, cancelled, durations)
  SELECT day, owner, configuration, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY day, owner, configuration, server
   ORDER BY day, owner, configuration, server
  ON CONFLICT (day, owner, configuration, server) DO UPDATE SET
    ok = tool_outcome_owner_configuration_server_daily.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_server_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_server_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_server_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_server_hourly (hour, server, ok, failed, cancelled, durations)
  SELECT hour, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT c.hour, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY hour, server
   ORDER BY hour, server
  ON CONFLICT (hour, server) DO UPDATE SET
    ok = tool_outcome_server_hourly.ok + excluded.ok,
    failed = tool_outcome_server_hourly.failed + excluded.failed,
    cancelled = tool_outcome_server_hourly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_server_hourly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_hourly (hour, owner, configuration, ok, failed, cancelled, durations)
  SELECT hour, owner, configuration, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT c.hour, c.owner, c.configuration, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY hour, owner, configuration
   ORDER BY hour, owner, configuration
  ON CONFLICT (hour, owner, configuration) DO UPDATE SET
    ok = tool_outcome_owner_configuration_hourly.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_hourly.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_hourly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_hourly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_weekly (week, owner, configuration, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, configuration
   ORDER BY week, owner, configuration
  ON CONFLICT (week, owner, configuration) DO UPDATE SET
    ok = tool_outcome_owner_configuration_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_server_weekly (week, owner, configuration, server, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY week, owner, configuration, server
   ORDER BY week, owner, configuration, server
  ON CONFLICT (week, owner, configuration, server) DO UPDATE SET
    ok = tool_outcome_owner_configuration_server_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_server_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_server_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_weekly (week, owner, ok, failed, cancelled, durations)
  SELECT week, owner, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY week, owner
   ORDER BY week, owner
  ON CONFLICT (week, owner) DO UPDATE SET
    ok = tool_outcome_owner_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_server_weekly (week, owner, server, ok, failed, cancelled, durations)
  SELECT week, owner, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, server
   ORDER BY week, owner, server
  ON CONFLICT (week, owner, server) DO UPDATE SET
    ok = tool_outcome_owner_server_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_server_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_server_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_configuration_server_weekly (week, configuration, server, ok, failed, cancelled, durations)
  SELECT week, configuration, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.configuration, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, configuration, server
   ORDER BY week, configuration, server
  ON CONFLICT (week, configuration, server) DO UPDATE SET
    ok = tool_outcome_configuration_server_weekly.ok + excluded.ok,
    failed = tool_outcome_configuration_server_weekly.failed + excluded.failed,
    cancelled = tool_outcome_configuration_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_configuration_server_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_tool_weekly (week, owner, tool_name, ok, failed, cancelled, durations)
  SELECT week, owner, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, tool_name
   ORDER BY week, owner, tool_name
  ON CONFLICT (week, owner, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_tool_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_tool_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_tool_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_server_tool_weekly (week, server, tool_name, ok, failed, cancelled, durations)
  SELECT week, server, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.server, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, server, tool_name
   ORDER BY week, server, tool_name
  ON CONFLICT (week, server, tool_name) DO UPDATE SET
    ok = tool_outcome_server_tool_weekly.ok + excluded.ok,
    failed = tool_outcome_server_tool_weekly.failed + excluded.failed,
    cancelled = tool_outcome_server_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_server_tool_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_configuration_tool_weekly (week, configuration, tool_name, ok, failed, cancelled, durations)
  SELECT week, configuration, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.configuration, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, configuration, tool_name
   ORDER BY week, configuration, tool_name
  ON CONFLICT (week, configuration, tool_name) DO UPDATE SET
    ok = tool_outcome_configuration_tool_weekly.ok + excluded.ok,
    failed = tool_outcome_configuration_tool_weekly.failed + excluded.failed,
    cancelled = tool_outcome_configuration_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_configuration_tool_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_tool_weekly (week, owner, configuration, tool_name, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY week, owner, configuration, tool_name
   ORDER BY week, owner, configuration, tool_name
  ON CONFLICT (week, owner, configuration, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_configuration_tool_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_tool_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_tool_weekly.durations, excluded.durations);
  INSERT INTO tool_outcome_weekly (week, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.server, c.tool_name,
         sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (week, owner, configuration, server, tool_name) DO UPDATE SET
    ok = tool_outcome_weekly.ok + excluded.ok,
    failed = tool_outcome_weekly.failed + excluded.failed,
    cancelled = tool_outcome_weekly.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_all_time (server, tool_name, owner, configuration, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.owner, c.configuration,
         sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4
   ORDER BY 1, 2, 3, 4
  ON CONFLICT (server, tool_name, owner, configuration) DO UPDATE SET
    ok = tool_outcome_all_time.ok + excluded.ok,
    failed = tool_outcome_all_time.failed + excluded.failed,
    cancelled = tool_outcome_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_all_time_durations (server, tool_name, owner, configuration, durations)
  SELECT server, tool_name, owner, configuration, tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT c.server, c.tool_name, c.owner, c.configuration, c.b,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY server, tool_name, owner, configuration
   ORDER BY server, tool_name, owner, configuration
  ON CONFLICT (server, tool_name, owner, configuration) DO UPDATE SET
    durations = tool_duration_histogram_add(tool_outcome_all_time_durations.durations, excluded.durations);
  INSERT INTO tool_outcome_owner_server_tool_all_time (server, tool_name, owner, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.owner, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (server, tool_name, owner) DO UPDATE SET
    ok = tool_outcome_owner_server_tool_all_time.ok + excluded.ok,
    failed = tool_outcome_owner_server_tool_all_time.failed + excluded.failed,
    cancelled = tool_outcome_owner_server_tool_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_configuration_server_tool_all_time (server, tool_name, configuration, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.configuration, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (server, tool_name, configuration) DO UPDATE SET
    ok = tool_outcome_configuration_server_tool_all_time.ok + excluded.ok,
    failed = tool_outcome_configuration_server_tool_all_time.failed + excluded.failed,
    cancelled = tool_outcome_configuration_server_tool_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_owner_configuration_server_all_time (owner, configuration, server, ok, failed, cancelled)
  SELECT c.owner, c.configuration, c.server, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (owner, configuration, server) DO UPDATE SET
    ok = tool_outcome_owner_configuration_server_all_time.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_server_all_time.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_server_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_owner_configuration_tool_all_time (owner, configuration, tool_name, ok, failed, cancelled)
  SELECT c.owner, c.configuration, c.tool_name, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (owner, configuration, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_configuration_tool_all_time.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_tool_all_time.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_tool_all_time.cancelled + excluded.cancelled;
  INSERT INTO tool_outcome_owner_server_all_time (owner, server, ok, failed, cancelled)
  SELECT c.owner, c.server, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2
   ORDER BY 1, 2
  ON CONFLICT (owner, server) DO UPDATE SET
    ok = tool_outcome_owner_server_all_time.ok + excluded.ok,
    failed = tool_outcome_owner_server_all_time.failed + excluded.failed,
    cancelled = tool_outcome_owner_server_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_configuration_server_all_time (configuration, server, ok, failed, cancelled)
  SELECT c.configuration, c.server, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2
   ORDER BY 1, 2
  ON CONFLICT (configuration, server) DO UPDATE SET
    ok = tool_outcome_configuration_server_all_time.ok + excluded.ok,
    failed = tool_outcome_configuration_server_all_time.failed + excluded.failed,
    cancelled = tool_outcome_configuration_server_all_time.cancelled + excluded.cancelled;
END;
$$;

-- TRUNCATE run_steps empties every rollup with it.
CREATE OR REPLACE FUNCTION tool_outcome_daily_follow_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE tool_outcome_daily, tool_outcome_owner_daily, tool_outcome_owner_daily_durations, tool_outcome_hourly, tool_outcome_hourly_durations, tool_outcome_server_daily, tool_outcome_owner_configuration_daily, tool_outcome_owner_tool_daily, tool_outcome_owner_configuration_server_daily, tool_outcome_server_hourly, tool_outcome_owner_configuration_hourly, tool_outcome_owner_configuration_weekly, tool_outcome_owner_configuration_server_weekly, tool_outcome_owner_weekly, tool_outcome_owner_server_weekly, tool_outcome_configuration_server_weekly, tool_outcome_owner_tool_weekly, tool_outcome_server_tool_weekly, tool_outcome_configuration_tool_weekly, tool_outcome_owner_configuration_tool_weekly, tool_outcome_weekly, tool_outcome_all_time, tool_outcome_all_time_durations, tool_outcome_owner_server_tool_all_time, tool_outcome_configuration_server_tool_all_time, tool_outcome_owner_configuration_server_all_time, tool_outcome_owner_configuration_tool_all_time, tool_outcome_owner_server_all_time, tool_outcome_configuration_server_all_time;
  RETURN NULL;
END;
$$;

-- Every rollup recounted from run_steps and runs, one week of calls (Monday,
-- 00:00 UTC, to the next) at a time through tool_outcome_rollups_add, the
-- function the triggers call: the way to build the rollups after a bulk load
-- made with the triggers disabled. A week at a time, not a day, so that a
-- weekly row is written once, not seven times in one transaction (which left
-- the weekly table seven times its size). Takes the locks that keep writers
-- out meanwhile.
CREATE OR REPLACE FUNCTION tool_outcome_rollups_rebuild() RETURNS void
LANGUAGE plpgsql AS $rebuild$
DECLARE
  first_call timestamp with time zone;
  last_call timestamp with time zone;
  week_start timestamp with time zone;
BEGIN
  LOCK TABLE runs, run_steps IN SHARE MODE;
  TRUNCATE tool_outcome_daily, tool_outcome_owner_daily, tool_outcome_owner_daily_durations, tool_outcome_hourly, tool_outcome_hourly_durations, tool_outcome_server_daily, tool_outcome_owner_configuration_daily, tool_outcome_owner_tool_daily, tool_outcome_owner_configuration_server_daily, tool_outcome_server_hourly, tool_outcome_owner_configuration_hourly, tool_outcome_owner_configuration_weekly, tool_outcome_owner_configuration_server_weekly, tool_outcome_owner_weekly, tool_outcome_owner_server_weekly, tool_outcome_configuration_server_weekly, tool_outcome_owner_tool_weekly, tool_outcome_server_tool_weekly, tool_outcome_configuration_tool_weekly, tool_outcome_owner_configuration_tool_weekly, tool_outcome_weekly, tool_outcome_all_time, tool_outcome_all_time_durations, tool_outcome_owner_server_tool_all_time, tool_outcome_configuration_server_tool_all_time, tool_outcome_owner_configuration_server_all_time, tool_outcome_owner_configuration_tool_all_time, tool_outcome_owner_server_all_time, tool_outcome_configuration_server_all_time;
  SELECT min(occurred_at), max(occurred_at) INTO first_call, last_call FROM run_steps WHERE kind = 'tool';
  IF first_call IS NULL THEN
    RETURN;
  END IF;
  week_start := date_trunc('week', first_call, 'UTC');
  WHILE week_start <= last_call LOOP
    PERFORM tool_outcome_rollups_add((
      SELECT array_agg(ROW(hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)::tool_call_cell)
        FROM (
          SELECT date_trunc('hour', s.occurred_at, 'UTC') AS hour, r.owner, r.configuration,
                 coalesce(s.server, '') AS server, coalesce(s.tool_name, '') AS tool_name,
                 tool_duration_bucket(s.duration_ms) AS b,
                 count(*) FILTER (WHERE stated.o = 'ok') AS ok,
                 count(*) FILTER (WHERE stated.o = 'failed') AS failed,
                 count(*) FILTER (WHERE stated.o = 'cancelled') AS cancelled
            FROM run_steps s JOIN runs r ON r.id = s.run_id,
                 LATERAL (SELECT stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) AS o) AS stated
           WHERE s.kind = 'tool' AND s.occurred_at >= week_start AND s.occurred_at < week_start + interval '168 hours'
             AND stated.o IS NOT NULL
           GROUP BY 1, 2, 3, 4, 5, 6
        ) AS cell
    ));
    -- 168 hours, not a week: a UTC week, whatever the session's time zone.
    week_start := week_start + interval '168 hours';
  END LOOP;
END;
$rebuild$;

-- The calls already stored: weeks of tool_outcome_owner_daily, which the triggers keep exact.
INSERT INTO tool_outcome_weekly (week, owner, configuration, server, tool_name, ok, failed, cancelled)
SELECT date_trunc('week', day)::date, owner, configuration, server, tool_name,
       sum(ok)::bigint, sum(failed)::bigint, sum(cancelled)::bigint
  FROM tool_outcome_owner_daily
 GROUP BY 1, 2, 3, 4, 5
 ORDER BY 1, 2, 3, 4, 5;
ANALYZE tool_outcome_weekly;
