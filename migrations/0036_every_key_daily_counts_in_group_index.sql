-- The daily rollup keyed by every field, and its durations: each index by
-- group (0033, 0034) now holds the columns a group's sums read, so those
-- reads are index-only scans. A statement that reads some groups' days (a
-- walk's or a ranking's pass, the histograms of the groups it returns) read
-- each group's rows from the heap, where a group's days lie on as many pages
-- as it has days with calls. Configuration x server x tool over 30 days on
-- 300 owners, 40 servers of 15 tools: the counts of 1,002 groups (44,000
-- rows) read 48,348 pages before and 3,475 now, the durations of 500 groups
-- (67,500 rows) 32,822 and 2,122. The index led by
-- configuration now has the day before the owner, so such a group reads the
-- range's days of its few owners, not all of their days.
--
-- The price: a count now is an indexed column, so a call on a key's day that
-- already has calls updates the row as a new version with an entry in each
-- of the table's indexes (as the rollups of all time always did), where it
-- was updated in place. To keep that entry count down, the indexes by owner
-- and day (0012, 0023) go: an actor who sees only its own runs reads its
-- rows from the index led by owner, now without the table.
SET LOCAL lock_timeout = '5s';

DROP INDEX tool_outcome_owner_daily_owner_idx;
DROP INDEX tool_outcome_owner_daily_durations_owner_idx;

DROP INDEX tool_outcome_owner_daily_group_idx;
CREATE INDEX tool_outcome_owner_daily_group_idx
  ON tool_outcome_owner_daily (owner, server, tool_name, configuration, day, ok, failed, cancelled);
DROP INDEX tool_outcome_owner_daily_configuration_group_idx;
CREATE INDEX tool_outcome_owner_daily_configuration_group_idx
  ON tool_outcome_owner_daily (configuration, server, tool_name, day, owner, ok, failed, cancelled);
DROP INDEX tool_outcome_owner_daily_durations_group_idx;
CREATE INDEX tool_outcome_owner_daily_durations_group_idx
  ON tool_outcome_owner_daily_durations (owner, server, tool_name, configuration, day, duration_bucket, calls);
DROP INDEX tool_outcome_owner_daily_durations_configuration_group_idx;
CREATE INDEX tool_outcome_owner_daily_durations_configuration_group_idx
  ON tool_outcome_owner_daily_durations (configuration, server, tool_name, day, owner, duration_bucket, calls);
