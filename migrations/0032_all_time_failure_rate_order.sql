-- The three largest rollups of all time (keyed by every field, by owner,
-- server and tool, and by configuration, server and tool) indexed in the
-- order of a ranking by failure rate, descending (the rate as the domain
-- computes it, failed / (ok + failed) in float8, none lowest), and of one by
-- failures, descending, each then by key by code point. Such a ranking walks
-- its first groups there, where it sorted every row (147,501 and 284,995 rows
-- on 300 owners, 40 servers of 15 tools: 100 to 200 ms). The smaller rollups
-- of all time sort their rows in a few milliseconds and carry no such index.
-- Like 0029's and 0031's, every write to these rows writes these indexes
-- too: the cost is measured in the README.
SET LOCAL lock_timeout = '5s';

CREATE INDEX tool_outcome_all_time_fail_rate_idx ON tool_outcome_all_time (
  (coalesce(failed::float8 / nullif(ok::float8 + failed::float8, 0), '-Infinity'::float8)) DESC,
  server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_owner_server_tool_all_time_fail_rate_idx ON tool_outcome_owner_server_tool_all_time (
  (coalesce(failed::float8 / nullif(ok::float8 + failed::float8, 0), '-Infinity'::float8)) DESC,
  server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_configuration_server_tool_all_time_fail_rate_idx ON tool_outcome_configuration_server_tool_all_time (
  (coalesce(failed::float8 / nullif(ok::float8 + failed::float8, 0), '-Infinity'::float8)) DESC,
  server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");

CREATE INDEX tool_outcome_all_time_failures_idx ON tool_outcome_all_time (
  (failed::float8) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_owner_server_tool_all_time_failures_idx ON tool_outcome_owner_server_tool_all_time (
  (failed::float8) DESC, server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_configuration_server_tool_all_time_failures_idx ON tool_outcome_configuration_server_tool_all_time (
  (failed::float8) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");
