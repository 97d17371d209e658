-- The daily rollup keyed by every field, and its durations, indexed by group
-- a second time: configuration, server, tool, owner, then the day. 0033's
-- index, led by owner, serves groups of all four fields and of owner, server
-- and tool; a group of configuration, server and tool is one range of this
-- one (its few owners read with it), so that grouping too is counted group by
-- group over a range of days (see 0033). As with 0033, the rows are still
-- updated in place; a group's first call of a day writes one more index entry
-- in each table.
SET LOCAL lock_timeout = '5s';

CREATE INDEX tool_outcome_owner_daily_configuration_group_idx
  ON tool_outcome_owner_daily (configuration, server, tool_name, owner, day);
CREATE INDEX tool_outcome_owner_daily_durations_configuration_group_idx
  ON tool_outcome_owner_daily_durations (configuration, server, tool_name, owner, day);
