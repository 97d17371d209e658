-- The durations of the daily rollup keyed by every field, indexed once more
-- by owner, server and tool, then the day. Grouped by those three fields (no
-- configuration), a group's histograms over a range were one range of the
-- index by group (0033, 0036) only up to the tool: the configuration comes
-- before the day there, so the group read every day of each of its few
-- configurations and kept the range's. Owner x server x tool over 30 days on
-- `teams`, the histograms of the 500 groups returned: 5,985 pages and 42 ms
-- before, 2,261 pages and 24.5 ms with this index. Grouped by all four fields
-- the index by group stays the better one (its configuration is fixed), and
-- the planner keeps it. The price: one more index entry for each row version
-- of this table (a call on a key's day and duration bucket).
SET LOCAL lock_timeout = '5s';

CREATE INDEX tool_outcome_owner_daily_durations_tool_day_idx
  ON tool_outcome_owner_daily_durations (owner, server, tool_name, day, duration_bucket, calls);
