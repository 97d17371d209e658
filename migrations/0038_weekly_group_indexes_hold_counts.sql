-- The weekly rollups indexed by group (0022: owner x server, configuration x
-- server, owner x configuration x server, owner x configuration x tool) keep
-- each week's histogram (65 numbers) in the row, about 600 bytes. A
-- ranking's first pass over a range of weeks reads only the counts, but read
-- them from the table: the owner x server one is 81 MB on 300 owners and 40
-- servers, and over 30 days the statement scanned all of it for 50,000 rows
-- (about 35 of its 70 ms). Each group index now holds the counts too, so the
-- counts of any range of weeks are read from the index alone (9 MB for that
-- table; 8 ms for those rows), and a group's weeks as before.
--
-- The price, as in 0036: a count is now an indexed column, so a call on a
-- key's week that already has calls writes a new row version with an entry
-- in both of the table's indexes, where it could be updated in place.
SET LOCAL lock_timeout = '5s';

DROP INDEX tool_outcome_owner_server_weekly_group_idx;
CREATE INDEX tool_outcome_owner_server_weekly_group_idx
  ON tool_outcome_owner_server_weekly (owner, server, week, ok, failed, cancelled);
DROP INDEX tool_outcome_configuration_server_weekly_group_idx;
CREATE INDEX tool_outcome_configuration_server_weekly_group_idx
  ON tool_outcome_configuration_server_weekly (configuration, server, week, ok, failed, cancelled);
DROP INDEX tool_outcome_owner_configuration_server_weekly_group_idx;
CREATE INDEX tool_outcome_owner_configuration_server_weekly_group_idx
  ON tool_outcome_owner_configuration_server_weekly (owner, configuration, server, week, ok, failed, cancelled);
DROP INDEX tool_outcome_owner_configuration_tool_weekly_group_idx;
CREATE INDEX tool_outcome_owner_configuration_tool_weekly_group_idx
  ON tool_outcome_owner_configuration_tool_weekly (owner, configuration, tool_name, week, ok, failed, cancelled);
