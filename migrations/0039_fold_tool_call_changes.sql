-- Writes store, statistics follow. Until now every statement on run_steps
-- upserted its tool calls into all twenty-six rollups (29 upserts) in its own
-- transaction, and concurrent writers of one owner and configuration queued on
-- the same rollup rows until commit. From here a statement appends what it
-- changed to tool_call_changes (one INSERT ... SELECT, no upsert, no row that
-- another writer touches), and the rollups follow asynchronously: a folder
-- takes a batch of changes, deletes them and adds them to every rollup with
-- tool_outcome_rollups_add (one INSERT ... SELECT ... GROUP BY ... ON CONFLICT
-- per rollup per batch), in one transaction. A change is thus either in the
-- log or in the rollups, never both and never neither, in every snapshot: a
-- statistics read sums the rollups and the changes not folded yet in one
-- snapshot and is exact the moment a write commits (the pattern of PostgreSQL
-- incremental rollups: the raw events are the log here, and the rollups are
-- kept by upserts of a batch at a time).
SET LOCAL lock_timeout = '5s';
-- No write may be counted by the old trigger function after the change log exists.
LOCK TABLE runs, run_steps IN SHARE MODE;

-- Signed calls per (hour, owner, configuration, server, tool, duration bucket),
-- as tool_call_cell holds them: the cells of one statement, not folded yet.
CREATE TABLE tool_call_changes (
  id bigint GENERATED ALWAYS AS IDENTITY,
  hour timestamp with time zone NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  b smallint NOT NULL,
  ok bigint NOT NULL,
  failed bigint NOT NULL,
  cancelled bigint NOT NULL,
  CONSTRAINT tool_call_changes_pkey PRIMARY KEY (id)
);

-- The cells of a statement's tool calls, appended: an insert reads its new
-- rows and their runs once (the common case, in one statement); an update or
-- a delete counts the rows removed and added through tool_call_cells.
CREATE OR REPLACE FUNCTION tool_outcome_daily_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  removed tool_step_change[];
  added tool_step_change[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO tool_call_changes (hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)
    SELECT date_trunc('hour', s.occurred_at, 'UTC'), r.owner, r.configuration,
           coalesce(s.server, ''), coalesce(s.tool_name, ''), tool_duration_bucket(s.duration_ms),
           count(*) FILTER (WHERE stated.o = 'ok'),
           count(*) FILTER (WHERE stated.o = 'failed'),
           count(*) FILTER (WHERE stated.o = 'cancelled')
      FROM new_steps s JOIN runs r ON r.id = s.run_id,
           LATERAL (SELECT stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) AS o) AS stated
     WHERE s.kind = 'tool' AND stated.o IS NOT NULL
     GROUP BY 1, 2, 3, 4, 5, 6;
    RETURN NULL;
  END IF;
  SELECT array_agg(ROW(run_id, kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms, -1, NULL, NULL)::tool_step_change)
    INTO removed FROM old_steps WHERE kind = 'tool';
  IF TG_OP = 'UPDATE' THEN
    SELECT array_agg(ROW(run_id, kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms, 1, NULL, NULL)::tool_step_change)
      INTO added FROM new_steps WHERE kind = 'tool';
  END IF;
  IF removed IS NULL AND added IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM tool_call_changes_append(tool_call_cells(coalesce(removed, '{}') || coalesce(added, '{}')));
  RETURN NULL;
END;
$$;

CREATE FUNCTION tool_call_changes_append(cells tool_call_cell[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tool_call_changes (hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)
  SELECT c.hour, c.owner, c.configuration, c.server, c.tool_name, c.b, c.ok, c.failed, c.cancelled
    FROM unnest(cells) AS c
$$;

-- A run that changes owner or configuration takes its calls along: removed
-- under the old key, added under the new one, whether folded yet or not.
CREATE OR REPLACE FUNCTION runs_rekey_tool_calls() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  moved tool_step_change[];
BEGIN
  SELECT array_agg(ROW(run_id, kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms, -1, OLD.owner, OLD.configuration)::tool_step_change)
         || array_agg(ROW(run_id, kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms, 1, NEW.owner, NEW.configuration)::tool_step_change)
    INTO moved FROM run_steps WHERE run_id = NEW.id AND kind = 'tool';
  IF moved IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM tool_call_changes_append(tool_call_cells(moved));
  RETURN NULL;
END;
$$;

-- TRUNCATE run_steps empties the rollups (tool_outcome_daily_follow_truncate)
-- and the changes not folded yet.
CREATE FUNCTION tool_call_changes_follow_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE tool_call_changes;
  RETURN NULL;
END;
$$;
CREATE TRIGGER run_steps_changes_follow_truncate AFTER TRUNCATE ON run_steps
  FOR EACH STATEMENT EXECUTE FUNCTION tool_call_changes_follow_truncate();

-- Folds up to max_changes changes, oldest first, into every rollup, and
-- returns how many it folded. The changes are deleted in the same
-- transaction as the rollups are added to: a folder that dies mid-batch rolls
-- both back. SKIP LOCKED: a second folder (which the advisory lock of the
-- service keeps out) would take other changes, never count one twice.
CREATE FUNCTION tool_outcome_rollups_fold(max_changes integer) RETURNS integer
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

-- The recount of every rollup from run_steps (0035) now also empties the
-- changes not folded yet, which run_steps already holds, under the same locks.
ALTER FUNCTION tool_outcome_rollups_rebuild() RENAME TO tool_outcome_rollups_recount;
CREATE FUNCTION tool_outcome_rollups_rebuild() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE runs, run_steps IN SHARE MODE;
  TRUNCATE tool_call_changes;
  PERFORM tool_outcome_rollups_recount();
END;
$$;
