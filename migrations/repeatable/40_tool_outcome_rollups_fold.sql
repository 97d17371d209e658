-- Folds up to max_changes changes, oldest first, into every rollup, and
-- returns how many it folded. The changes are deleted in the same
-- transaction as the rollups are added to: a folder that dies mid-batch rolls
-- both back. SKIP LOCKED: a second folder (which the advisory lock of the
-- service keeps out) would take other changes, never count one twice.
CREATE OR REPLACE FUNCTION tool_outcome_rollups_fold(max_changes integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  cells tool_call_cell[];
  folded integer;
BEGIN
  WITH taken AS (
    DELETE FROM tool_call_changes
     WHERE id IN (SELECT id FROM tool_call_changes ORDER BY id LIMIT max_changes FOR UPDATE SKIP LOCKED)
    RETURNING hour, owner, configuration, server, tool_name, b, ok, failed, cancelled
  ), summed AS (
    SELECT hour, owner, configuration, server, tool_name, b,
           sum(ok)::bigint AS ok, sum(failed)::bigint AS failed, sum(cancelled)::bigint AS cancelled,
           count(*)::integer AS changes
      FROM taken
     GROUP BY 1, 2, 3, 4, 5, 6
  )
  SELECT array_agg(ROW(hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)::tool_call_cell)
           FILTER (WHERE ok <> 0 OR failed <> 0 OR cancelled <> 0),
         coalesce(sum(changes), 0)::integer
    INTO cells, folded
    FROM summed;
  PERFORM tool_outcome_rollups_add(cells);
  RETURN folded;
END;
$$;
