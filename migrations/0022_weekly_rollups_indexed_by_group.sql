-- Indexes that find one group's weeks: a request grouped by owner and server,
-- or configuration and server, with percentiles ranks its groups by their
-- counts first, then reads the histograms of the groups it returns only. Each
-- of those groups' weeks is then a range of one of these indexes, where the
-- primary keys, led by the week, make it read every key of those weeks.
--
--   tool_outcome_owner_server_weekly          (owner, server, week)
--   tool_outcome_configuration_server_weekly  (configuration, server, week)
--
-- The first replaces the index on (owner, week), which served an own-runs
-- actor: its leading owner serves it still. The columns indexed are a row's
-- key, which no write changes, so a write that adds calls to an existing row
-- updates no index.
SET LOCAL lock_timeout = '5s';

DROP INDEX tool_outcome_owner_server_weekly_owner_idx;
CREATE INDEX tool_outcome_owner_server_weekly_group_idx
  ON tool_outcome_owner_server_weekly (owner, server, week);
CREATE INDEX tool_outcome_configuration_server_weekly_group_idx
  ON tool_outcome_configuration_server_weekly (configuration, server, week);
