-- The daily rollup keyed by every field, and its durations, indexed by group:
-- owner, server, tool, configuration, then the day (as 0022 and 0028 index
-- the weekly rollups). A statement that reads some groups over a range of
-- days (a ranking's second pass, a walk over the groups of all time) then
-- reads each group's days as one range of the index, where it read every row
-- of every day and kept a few: 500 groups of all four fields over 30 days on
-- 300 owners, 40 servers of 15 tools, 270,000 daily rows and 316,000
-- durations rows read for 8,000 and 43,000 kept. A group of owner, server
-- and tool is one range too, its few configurations read with it. The rows
-- are still updated in place (no count is indexed); a new row, a group's
-- first call of a day, writes one more index entry.
SET LOCAL lock_timeout = '5s';

CREATE INDEX tool_outcome_owner_daily_group_idx
  ON tool_outcome_owner_daily (owner, server, tool_name, configuration, day);
CREATE INDEX tool_outcome_owner_daily_durations_group_idx
  ON tool_outcome_owner_daily_durations (owner, server, tool_name, configuration, day);
