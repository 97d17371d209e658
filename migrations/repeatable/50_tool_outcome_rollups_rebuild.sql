-- Every rollup counted again from run_steps (after a bulk load made with the
-- triggers off, or when the rollups' tables are made again), under the locks
-- that keep writers out; the changes not folded yet are emptied, as run_steps
-- already holds them.
CREATE OR REPLACE FUNCTION tool_outcome_rollups_rebuild() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE runs, run_steps IN SHARE MODE;
  TRUNCATE tool_call_changes;
  PERFORM tool_outcome_rollups_recount();
END;
$$;
