-- Made from the rollup catalogue (src/domain/outcome-rollups.ts) by `npm run rollups:write`: do not edit.
-- Every rollup recounted from run_steps and runs, a week of calls (Monday, 00:00 UTC, to the next)
-- at a time, through tool_outcome_rollups_add: a weekly row is written once, not seven times in one
-- transaction. The caller holds the locks that keep writers out (tool_outcome_rollups_rebuild).
CREATE OR REPLACE FUNCTION tool_outcome_rollups_recount() RETURNS void
LANGUAGE plpgsql AS $recount$
DECLARE
  first_call timestamp with time zone;
  last_call timestamp with time zone;
  week_start timestamp with time zone;
BEGIN
  TRUNCATE stats_server_daily, stats_server_tool_daily, stats_owner_configuration_daily, stats_owner_tool_daily, stats_owner_configuration_server_daily, stats_owner_configuration_server_tool_daily, stats_owner_configuration_server_tool_daily_durations, stats_server_hourly, stats_owner_configuration_hourly, stats_owner_configuration_server_tool_hourly, stats_owner_configuration_server_tool_hourly_durations, stats_owner_weekly, stats_server_tool_weekly, stats_owner_configuration_weekly, stats_owner_server_weekly, stats_configuration_server_weekly, stats_owner_tool_weekly, stats_owner_configuration_server_weekly, stats_configuration_tool_weekly, stats_owner_configuration_tool_weekly, stats_owner_configuration_server_tool_weekly, stats_configuration_server_all_time, stats_owner_server_all_time, stats_owner_configuration_tool_all_time, stats_owner_configuration_server_all_time, stats_configuration_server_tool_all_time, stats_owner_server_tool_all_time, stats_owner_configuration_server_tool_all_time, stats_owner_configuration_server_tool_all_time_histograms;
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
$recount$;
