-- Made from the rollup catalogue (src/domain/outcome-rollups.ts) by `npm run rollups:write`: do not edit.
-- Adds a batch of cells (signed calls per hour, key and duration bucket) to every rollup: one
-- INSERT ... ON CONFLICT per table, the batch's cells summed per row first.
CREATE OR REPLACE FUNCTION tool_outcome_rollups_add(cells tool_call_cell[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  day_cells tool_call_cell[];
  week_cells tool_call_cell[];
BEGIN
  IF cells IS NULL OR cardinality(cells) = 0 THEN
    RETURN;
  END IF;
  -- Summed once per day and per week, not by each rollup of those units: a batch of few keys holds
  -- a key's calls of many hours.
  day_cells := ARRAY(
    SELECT ROW(date_trunc('day', c.hour, 'UTC'), c.owner, c.configuration, c.server, c.tool_name, c.b,
               sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint)::tool_call_cell
      FROM unnest(cells) AS c
     GROUP BY date_trunc('day', c.hour, 'UTC'), c.owner, c.configuration, c.server, c.tool_name, c.b);
  week_cells := ARRAY(
    SELECT ROW(date_trunc('week', c.hour, 'UTC'), c.owner, c.configuration, c.server, c.tool_name, c.b,
               sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint)::tool_call_cell
      FROM unnest(day_cells) AS c
     GROUP BY date_trunc('week', c.hour, 'UTC'), c.owner, c.configuration, c.server, c.tool_name, c.b);

  INSERT INTO stats_server_daily (day, server, ok, failed, cancelled, durations)
  SELECT day, server, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.server, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(day_cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY day, server
   ORDER BY day, server
  ON CONFLICT (day, server) DO UPDATE SET
    ok = stats_server_daily.ok + excluded.ok,
    failed = stats_server_daily.failed + excluded.failed,
    cancelled = stats_server_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_server_daily.durations, excluded.durations);

  INSERT INTO stats_server_tool_daily (day, server, tool_name, ok, failed, cancelled, durations)
  SELECT day, server, tool_name, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.server, c.tool_name, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(day_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, server, tool_name
   ORDER BY day, server, tool_name
  ON CONFLICT (day, server, tool_name) DO UPDATE SET
    ok = stats_server_tool_daily.ok + excluded.ok,
    failed = stats_server_tool_daily.failed + excluded.failed,
    cancelled = stats_server_tool_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_server_tool_daily.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_daily (day, owner, configuration, ok, failed, cancelled, durations)
  SELECT day, owner, configuration, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(day_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, owner, configuration
   ORDER BY day, owner, configuration
  ON CONFLICT (day, owner, configuration) DO UPDATE SET
    ok = stats_owner_configuration_daily.ok + excluded.ok,
    failed = stats_owner_configuration_daily.failed + excluded.failed,
    cancelled = stats_owner_configuration_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_configuration_daily.durations, excluded.durations);

  INSERT INTO stats_owner_tool_daily (day, owner, tool_name, ok, failed, cancelled, durations)
  SELECT day, owner, tool_name, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.tool_name, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(day_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, owner, tool_name
   ORDER BY day, owner, tool_name
  ON CONFLICT (day, owner, tool_name) DO UPDATE SET
    ok = stats_owner_tool_daily.ok + excluded.ok,
    failed = stats_owner_tool_daily.failed + excluded.failed,
    cancelled = stats_owner_tool_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_tool_daily.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_server_daily (day, owner, configuration, server, ok, failed, cancelled, durations)
  SELECT day, owner, configuration, server, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(day_cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY day, owner, configuration, server
   ORDER BY day, owner, configuration, server
  ON CONFLICT (day, owner, configuration, server) DO UPDATE SET
    ok = stats_owner_configuration_server_daily.ok + excluded.ok,
    failed = stats_owner_configuration_server_daily.failed + excluded.failed,
    cancelled = stats_owner_configuration_server_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_configuration_server_daily.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_server_tool_daily (day, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.tool_name, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(day_cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (day, owner, configuration, server, tool_name) DO UPDATE SET
    ok = stats_owner_configuration_server_tool_daily.ok + excluded.ok,
    failed = stats_owner_configuration_server_tool_daily.failed + excluded.failed,
    cancelled = stats_owner_configuration_server_tool_daily.cancelled + excluded.cancelled;

  INSERT INTO stats_owner_configuration_server_tool_daily_durations (day, owner, configuration, server, tool_name, duration_bucket, calls)
  SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.tool_name, c.b::smallint, sum(c.ok + c.failed + c.cancelled)::bigint
    FROM unnest(day_cells) AS c
   GROUP BY 1, 2, 3, 4, 5, 6
  HAVING sum(c.ok + c.failed + c.cancelled)::bigint <> 0
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (day, owner, configuration, server, tool_name, duration_bucket) DO UPDATE SET
    calls = stats_owner_configuration_server_tool_daily_durations.calls + excluded.calls;

  INSERT INTO stats_server_hourly (hour, server, ok, failed, cancelled, durations)
  SELECT hour, server, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT c.hour AS hour, c.server, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY hour, server
   ORDER BY hour, server
  ON CONFLICT (hour, server) DO UPDATE SET
    ok = stats_server_hourly.ok + excluded.ok,
    failed = stats_server_hourly.failed + excluded.failed,
    cancelled = stats_server_hourly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_server_hourly.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_hourly (hour, owner, configuration, ok, failed, cancelled, durations)
  SELECT hour, owner, configuration, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT c.hour AS hour, c.owner, c.configuration, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY hour, owner, configuration
   ORDER BY hour, owner, configuration
  ON CONFLICT (hour, owner, configuration) DO UPDATE SET
    ok = stats_owner_configuration_hourly.ok + excluded.ok,
    failed = stats_owner_configuration_hourly.failed + excluded.failed,
    cancelled = stats_owner_configuration_hourly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_configuration_hourly.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_server_tool_hourly (hour, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT c.hour AS hour, c.owner, c.configuration, c.server, c.tool_name, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (hour, owner, configuration, server, tool_name) DO UPDATE SET
    ok = stats_owner_configuration_server_tool_hourly.ok + excluded.ok,
    failed = stats_owner_configuration_server_tool_hourly.failed + excluded.failed,
    cancelled = stats_owner_configuration_server_tool_hourly.cancelled + excluded.cancelled;

  INSERT INTO stats_owner_configuration_server_tool_hourly_durations (hour, owner, configuration, server, tool_name, duration_bucket, calls)
  SELECT c.hour AS hour, c.owner, c.configuration, c.server, c.tool_name, c.b::smallint, sum(c.ok + c.failed + c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5, 6
  HAVING sum(c.ok + c.failed + c.cancelled)::bigint <> 0
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (hour, owner, configuration, server, tool_name, duration_bucket) DO UPDATE SET
    calls = stats_owner_configuration_server_tool_hourly_durations.calls + excluded.calls;

  INSERT INTO stats_owner_weekly (week, owner, ok, failed, cancelled, durations)
  SELECT week, owner, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY week, owner
   ORDER BY week, owner
  ON CONFLICT (week, owner) DO UPDATE SET
    ok = stats_owner_weekly.ok + excluded.ok,
    failed = stats_owner_weekly.failed + excluded.failed,
    cancelled = stats_owner_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_weekly.durations, excluded.durations);

  INSERT INTO stats_server_tool_weekly (week, server, tool_name, ok, failed, cancelled, durations)
  SELECT week, server, tool_name, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.server, c.tool_name, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, server, tool_name
   ORDER BY week, server, tool_name
  ON CONFLICT (week, server, tool_name) DO UPDATE SET
    ok = stats_server_tool_weekly.ok + excluded.ok,
    failed = stats_server_tool_weekly.failed + excluded.failed,
    cancelled = stats_server_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_server_tool_weekly.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_weekly (week, owner, configuration, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, configuration
   ORDER BY week, owner, configuration
  ON CONFLICT (week, owner, configuration) DO UPDATE SET
    ok = stats_owner_configuration_weekly.ok + excluded.ok,
    failed = stats_owner_configuration_weekly.failed + excluded.failed,
    cancelled = stats_owner_configuration_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_configuration_weekly.durations, excluded.durations);

  INSERT INTO stats_owner_server_weekly (week, owner, server, ok, failed, cancelled, durations)
  SELECT week, owner, server, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.server, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, server
   ORDER BY week, owner, server
  ON CONFLICT (week, owner, server) DO UPDATE SET
    ok = stats_owner_server_weekly.ok + excluded.ok,
    failed = stats_owner_server_weekly.failed + excluded.failed,
    cancelled = stats_owner_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_server_weekly.durations, excluded.durations);

  INSERT INTO stats_configuration_server_weekly (week, configuration, server, ok, failed, cancelled, durations)
  SELECT week, configuration, server, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.configuration, c.server, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, configuration, server
   ORDER BY week, configuration, server
  ON CONFLICT (week, configuration, server) DO UPDATE SET
    ok = stats_configuration_server_weekly.ok + excluded.ok,
    failed = stats_configuration_server_weekly.failed + excluded.failed,
    cancelled = stats_configuration_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_configuration_server_weekly.durations, excluded.durations);

  INSERT INTO stats_owner_tool_weekly (week, owner, tool_name, ok, failed, cancelled, durations)
  SELECT week, owner, tool_name, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.tool_name, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, tool_name
   ORDER BY week, owner, tool_name
  ON CONFLICT (week, owner, tool_name) DO UPDATE SET
    ok = stats_owner_tool_weekly.ok + excluded.ok,
    failed = stats_owner_tool_weekly.failed + excluded.failed,
    cancelled = stats_owner_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_tool_weekly.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_server_weekly (week, owner, configuration, server, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, server, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.server, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY week, owner, configuration, server
   ORDER BY week, owner, configuration, server
  ON CONFLICT (week, owner, configuration, server) DO UPDATE SET
    ok = stats_owner_configuration_server_weekly.ok + excluded.ok,
    failed = stats_owner_configuration_server_weekly.failed + excluded.failed,
    cancelled = stats_owner_configuration_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_configuration_server_weekly.durations, excluded.durations);

  INSERT INTO stats_configuration_tool_weekly (week, configuration, tool_name, ok, failed, cancelled, durations)
  SELECT week, configuration, tool_name, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.configuration, c.tool_name, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, configuration, tool_name
   ORDER BY week, configuration, tool_name
  ON CONFLICT (week, configuration, tool_name) DO UPDATE SET
    ok = stats_configuration_tool_weekly.ok + excluded.ok,
    failed = stats_configuration_tool_weekly.failed + excluded.failed,
    cancelled = stats_configuration_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_configuration_tool_weekly.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_tool_weekly (week, owner, configuration, tool_name, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, tool_name, sum(ok), sum(failed), sum(cancelled), CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.tool_name, c.b, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY week, owner, configuration, tool_name
   ORDER BY week, owner, configuration, tool_name
  ON CONFLICT (week, owner, configuration, tool_name) DO UPDATE SET
    ok = stats_owner_configuration_tool_weekly.ok + excluded.ok,
    failed = stats_owner_configuration_tool_weekly.failed + excluded.failed,
    cancelled = stats_owner_configuration_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(stats_owner_configuration_tool_weekly.durations, excluded.durations);

  INSERT INTO stats_owner_configuration_server_tool_weekly (week, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.server, c.tool_name, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(week_cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (week, owner, configuration, server, tool_name) DO UPDATE SET
    ok = stats_owner_configuration_server_tool_weekly.ok + excluded.ok,
    failed = stats_owner_configuration_server_tool_weekly.failed + excluded.failed,
    cancelled = stats_owner_configuration_server_tool_weekly.cancelled + excluded.cancelled;

  INSERT INTO stats_configuration_server_all_time (configuration, server, ok, failed, cancelled)
  SELECT c.configuration, c.server, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(week_cells) AS c
   GROUP BY 1, 2
   ORDER BY 1, 2
  ON CONFLICT (configuration, server) DO UPDATE SET
    ok = stats_configuration_server_all_time.ok + excluded.ok,
    failed = stats_configuration_server_all_time.failed + excluded.failed,
    cancelled = stats_configuration_server_all_time.cancelled + excluded.cancelled;

  INSERT INTO stats_owner_server_all_time (owner, server, ok, failed, cancelled)
  SELECT c.owner, c.server, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(week_cells) AS c
   GROUP BY 1, 2
   ORDER BY 1, 2
  ON CONFLICT (owner, server) DO UPDATE SET
    ok = stats_owner_server_all_time.ok + excluded.ok,
    failed = stats_owner_server_all_time.failed + excluded.failed,
    cancelled = stats_owner_server_all_time.cancelled + excluded.cancelled;

  INSERT INTO stats_owner_configuration_tool_all_time (owner, configuration, tool_name, ok, failed, cancelled)
  SELECT c.owner, c.configuration, c.tool_name, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(week_cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (owner, configuration, tool_name) DO UPDATE SET
    ok = stats_owner_configuration_tool_all_time.ok + excluded.ok,
    failed = stats_owner_configuration_tool_all_time.failed + excluded.failed,
    cancelled = stats_owner_configuration_tool_all_time.cancelled + excluded.cancelled;

  INSERT INTO stats_owner_configuration_server_all_time (owner, configuration, server, ok, failed, cancelled)
  SELECT c.owner, c.configuration, c.server, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(week_cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (owner, configuration, server) DO UPDATE SET
    ok = stats_owner_configuration_server_all_time.ok + excluded.ok,
    failed = stats_owner_configuration_server_all_time.failed + excluded.failed,
    cancelled = stats_owner_configuration_server_all_time.cancelled + excluded.cancelled;

  INSERT INTO stats_configuration_server_tool_all_time (server, tool_name, configuration, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.configuration, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(week_cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (server, tool_name, configuration) DO UPDATE SET
    ok = stats_configuration_server_tool_all_time.ok + excluded.ok,
    failed = stats_configuration_server_tool_all_time.failed + excluded.failed,
    cancelled = stats_configuration_server_tool_all_time.cancelled + excluded.cancelled;

  INSERT INTO stats_owner_server_tool_all_time (server, tool_name, owner, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.owner, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(week_cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (server, tool_name, owner) DO UPDATE SET
    ok = stats_owner_server_tool_all_time.ok + excluded.ok,
    failed = stats_owner_server_tool_all_time.failed + excluded.failed,
    cancelled = stats_owner_server_tool_all_time.cancelled + excluded.cancelled;

  INSERT INTO stats_owner_configuration_server_tool_all_time (server, tool_name, owner, configuration, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.owner, c.configuration, sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled
    FROM unnest(week_cells) AS c
   GROUP BY 1, 2, 3, 4
   ORDER BY 1, 2, 3, 4
  ON CONFLICT (server, tool_name, owner, configuration) DO UPDATE SET
    ok = stats_owner_configuration_server_tool_all_time.ok + excluded.ok,
    failed = stats_owner_configuration_server_tool_all_time.failed + excluded.failed,
    cancelled = stats_owner_configuration_server_tool_all_time.cancelled + excluded.cancelled;

  INSERT INTO stats_owner_configuration_server_tool_all_time_histograms (server, tool_name, owner, configuration, durations)
  SELECT server, tool_name, owner, configuration, CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END
    FROM (
      SELECT c.server, c.tool_name, c.owner, c.configuration, c.b, sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(week_cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY server, tool_name, owner, configuration
   ORDER BY server, tool_name, owner, configuration
  ON CONFLICT (server, tool_name, owner, configuration) DO UPDATE SET
    durations = tool_duration_histogram_add(stats_owner_configuration_server_tool_all_time_histograms.durations, excluded.durations);
END;
$$;
