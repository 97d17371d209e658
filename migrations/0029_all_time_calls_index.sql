-- The rollups of all time indexed by the calls each row counts, so that a
-- ranking by calls, descending, finds the group at `first + 1` and the groups
-- above it by the index, where it read every row of the table twice (284,995
-- rows keyed by all four fields on 300 owners, 40 servers of 15 tools: 80 to
-- 130 ms, 9 by the index). Every write to a row changes its calls, so the
-- rows of these tables are no longer updated in place (HOT): the cost is
-- measured in the README.
SET LOCAL lock_timeout = '5s';

CREATE INDEX tool_outcome_all_time_calls_idx
  ON tool_outcome_all_time ((ok + failed + cancelled));
CREATE INDEX tool_outcome_owner_server_tool_all_time_calls_idx
  ON tool_outcome_owner_server_tool_all_time ((ok + failed + cancelled));
CREATE INDEX tool_outcome_configuration_server_tool_all_time_calls_idx
  ON tool_outcome_configuration_server_tool_all_time ((ok + failed + cancelled));
CREATE INDEX tool_outcome_owner_configuration_server_all_time_calls_idx
  ON tool_outcome_owner_configuration_server_all_time ((ok + failed + cancelled));
CREATE INDEX tool_outcome_owner_configuration_tool_all_time_calls_idx
  ON tool_outcome_owner_configuration_tool_all_time ((ok + failed + cancelled));
