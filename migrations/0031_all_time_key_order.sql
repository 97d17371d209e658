-- The rollups of all time keyed by exactly the grouped fields, each indexed
-- by its key in the order groups rank by key: server, tool, configuration,
-- owner, each name by code point (collate "C", the domain's order of names).
-- A ranking by key (the default order) then walks the first `first + 1 + k`
-- groups of the index, where it sorted every row of the table (284,995 rows
-- keyed by all four fields on 300 owners, 40 servers of 15 tools). As with
-- the index on calls (0029), these rows are not updated in place, so every
-- write to a row also writes this index: the cost is measured in the README.
SET LOCAL lock_timeout = '5s';

CREATE INDEX tool_outcome_all_time_key_order_idx ON tool_outcome_all_time
  (server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_owner_server_tool_all_time_key_order_idx ON tool_outcome_owner_server_tool_all_time
  (server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_configuration_server_tool_all_time_key_order_idx ON tool_outcome_configuration_server_tool_all_time
  (server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");
CREATE INDEX tool_outcome_owner_configuration_server_all_time_key_order_idx ON tool_outcome_owner_configuration_server_all_time
  (server COLLATE "C", configuration COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_owner_configuration_tool_all_time_key_order_idx ON tool_outcome_owner_configuration_tool_all_time
  (tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_owner_server_all_time_key_order_idx ON tool_outcome_owner_server_all_time
  (server COLLATE "C", owner COLLATE "C");
CREATE INDEX tool_outcome_configuration_server_all_time_key_order_idx ON tool_outcome_configuration_server_all_time
  (server COLLATE "C", configuration COLLATE "C");
