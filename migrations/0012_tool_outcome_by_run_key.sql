-- Outcome statistics for every grouping and every actor: two more rollups of
-- the tool calls, keyed by the run's owner and configuration as well as the
-- server and tool, at the grain of a UTC hour and of a UTC day.
--
-- tool_outcome_daily (day, server, tool) still answers what needs neither
-- owner nor configuration for an actor who may see every run: it is the
-- smallest. tool_outcome_owner_daily answers every other grouping by whole
-- UTC days, a restricted actor included (the owner is in its key), and
-- tool_outcome_hourly answers hourly buckets, days that start at another
-- whole-hour UTC offset, and the whole hours at the edges of a range.
--
-- The three stay exact in the same transaction as every write: one trigger
-- function counts the calls a statement touched once, per (hour, owner,
-- configuration, server, tool, duration bucket), and adds them to all three.
-- A run's owner and configuration live on runs, so the trigger reads them
-- there; deleting a run deletes its steps first (while the run is still there
-- to say whose they were), and changing a run's owner or configuration moves
-- its calls from the old key to the new one.
SET LOCAL lock_timeout = '5s';
-- No write may be counted by the old function into the old tables only.
LOCK TABLE runs, run_steps IN SHARE MODE;

CREATE TABLE tool_outcome_hourly (
  hour timestamp with time zone NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint NOT NULL DEFAULT 0,
  failed bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0,
  durations bigint[] NOT NULL DEFAULT array_fill(0::bigint, ARRAY[65]),
  CONSTRAINT tool_outcome_hourly_pkey PRIMARY KEY (hour, owner, configuration, server, tool_name),
  CONSTRAINT tool_outcome_hourly_durations_shape CHECK (
    array_ndims(durations) = 1 AND array_lower(durations, 1) = 1 AND array_upper(durations, 1) = 65
    AND array_position(durations, NULL) IS NULL
  )
);
-- An actor who sees only its own runs reads only its own rows.
CREATE INDEX tool_outcome_hourly_owner_idx ON tool_outcome_hourly (owner, hour);

CREATE TABLE tool_outcome_owner_daily (
  day date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint NOT NULL DEFAULT 0,
  failed bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0,
  durations bigint[] NOT NULL DEFAULT array_fill(0::bigint, ARRAY[65]),
  CONSTRAINT tool_outcome_owner_daily_pkey PRIMARY KEY (day, owner, configuration, server, tool_name),
  CONSTRAINT tool_outcome_owner_daily_durations_shape CHECK (
    array_ndims(durations) = 1 AND array_lower(durations, 1) = 1 AND array_upper(durations, 1) = 65
    AND array_position(durations, NULL) IS NULL
  )
);
CREATE INDEX tool_outcome_owner_daily_owner_idx ON tool_outcome_owner_daily (owner, day);

-- A tool step as the rollups need it (never its payload): its run, whether
-- it is added (1) or removed (-1), and, for a run being re-keyed, the owner
-- and configuration to count it under (NULL: the run's own).
CREATE TYPE tool_step_change AS (
  run_id bigint,
  kind text,
  occurred_at timestamp with time zone,
  server text,
  tool_name text,
  tool_is_error boolean,
  tool_outcome text,
  duration_ms integer,
  sign integer,
  owner text,
  configuration text
);

-- Calls counted per (hour, owner, configuration, server, tool, duration bucket), signed.
CREATE TYPE tool_call_cell AS (
  hour timestamp with time zone,
  owner text,
  configuration text,
  server text,
  tool_name text,
  b integer,
  ok bigint,
  failed bigint,
  cancelled bigint
);

-- Adds signed cells to the three rollups, keys in order, so concurrent
-- writers do not lock rows crosswise. Rows that fall to zero stay (as in
-- tool_outcome_daily): a later call on the same key reuses them.
CREATE FUNCTION tool_outcome_rollups_add(cells tool_call_cell[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF cells IS NULL OR cardinality(cells) = 0 THEN
    RETURN;
  END IF;
  INSERT INTO tool_outcome_daily (day, server, tool_name, ok, failed, cancelled, durations)
  SELECT day, server, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.server, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, server, tool_name
   ORDER BY day, server, tool_name
  ON CONFLICT (day, server, tool_name) DO UPDATE SET
    ok = tool_outcome_daily.ok + excluded.ok,
    failed = tool_outcome_daily.failed + excluded.failed,
    cancelled = tool_outcome_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_daily (day, owner, configuration, server, tool_name, ok, failed, cancelled, durations)
  SELECT day, owner, configuration, server, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5, 6
    ) AS by_bucket
   GROUP BY day, owner, configuration, server, tool_name
   ORDER BY day, owner, configuration, server, tool_name
  ON CONFLICT (day, owner, configuration, server, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_daily.ok + excluded.ok,
    failed = tool_outcome_owner_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_hourly (hour, owner, configuration, server, tool_name, ok, failed, cancelled, durations)
  SELECT c.hour, c.owner, c.configuration, c.server, c.tool_name, sum(c.ok), sum(c.failed), sum(c.cancelled),
         tool_duration_histogram(array_agg(c.b), array_agg(c.ok + c.failed + c.cancelled))
    FROM unnest(cells) AS c
   GROUP BY c.hour, c.owner, c.configuration, c.server, c.tool_name
   ORDER BY c.hour, c.owner, c.configuration, c.server, c.tool_name
  ON CONFLICT (hour, owner, configuration, server, tool_name) DO UPDATE SET
    ok = tool_outcome_hourly.ok + excluded.ok,
    failed = tool_outcome_hourly.failed + excluded.failed,
    cancelled = tool_outcome_hourly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_hourly.durations, excluded.durations);
END;
$$;

-- The cells of signed tool steps, under the owner and configuration of each
-- step's run unless the change names them.
CREATE FUNCTION tool_call_cells(steps tool_step_change[])
RETURNS tool_call_cell[]
LANGUAGE sql STABLE AS $$
  SELECT array_agg(ROW(hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)::tool_call_cell)
    FROM (
      SELECT date_trunc('hour', s.occurred_at, 'UTC') AS hour,
             coalesce(s.owner, r.owner) AS owner,
             coalesce(s.configuration, r.configuration) AS configuration,
             coalesce(s.server, '') AS server,
             coalesce(s.tool_name, '') AS tool_name,
             tool_duration_bucket(s.duration_ms) AS b,
             sum(s.sign * (s.o = 'ok')::int)::bigint AS ok,
             sum(s.sign * (s.o = 'failed')::int)::bigint AS failed,
             sum(s.sign * (s.o = 'cancelled')::int)::bigint AS cancelled
        FROM (SELECT u.*, stated_tool_outcome(u.kind, u.tool_is_error, u.tool_outcome) AS o
                FROM unnest(steps) AS u) AS s
        LEFT JOIN runs r ON r.id = s.run_id AND (s.owner IS NULL OR s.configuration IS NULL)
       WHERE s.o IS NOT NULL
       GROUP BY 1, 2, 3, 4, 5, 6
    ) AS cell
   WHERE ok <> 0 OR failed <> 0 OR cancelled <> 0
$$;

-- Restated whole, not edited in 0011: an applied migration is checksummed and
-- never changes. The calls a statement removed and added, counted once, go to
-- every rollup.
CREATE OR REPLACE FUNCTION tool_outcome_daily_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  removed tool_step_change[];
  added tool_step_change[];
BEGIN
  IF TG_OP <> 'INSERT' THEN
    SELECT array_agg(ROW(run_id, kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms, -1, NULL, NULL)::tool_step_change)
      INTO removed FROM old_steps WHERE kind = 'tool';
  END IF;
  IF TG_OP <> 'DELETE' THEN
    SELECT array_agg(ROW(run_id, kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms, 1, NULL, NULL)::tool_step_change)
      INTO added FROM new_steps WHERE kind = 'tool';
  END IF;
  IF removed IS NULL AND added IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM tool_outcome_rollups_add(tool_call_cells(coalesce(removed, '{}') || coalesce(added, '{}')));
  RETURN NULL;
END;
$$;

-- TRUNCATE run_steps empties every rollup with it.
CREATE OR REPLACE FUNCTION tool_outcome_daily_follow_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE tool_outcome_daily, tool_outcome_owner_daily, tool_outcome_hourly;
  RETURN NULL;
END;
$$;

-- A run's steps go before the run does, so the rollups learn whose calls left.
CREATE FUNCTION runs_delete_steps_first() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM run_steps WHERE run_id = OLD.id;
  RETURN OLD;
END;
$$;
CREATE TRIGGER runs_delete_steps_first BEFORE DELETE ON runs
  FOR EACH ROW EXECUTE FUNCTION runs_delete_steps_first();

-- A run that changes owner or configuration takes its calls along.
CREATE FUNCTION runs_rekey_tool_calls() RETURNS trigger
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
  PERFORM tool_outcome_rollups_add(tool_call_cells(moved));
  RETURN NULL;
END;
$$;
CREATE TRIGGER runs_rekey_tool_calls AFTER UPDATE OF owner, configuration ON runs
  FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.configuration IS DISTINCT FROM NEW.configuration)
  EXECUTE FUNCTION runs_rekey_tool_calls();

-- The rollups recounted from run_steps and runs, as the trigger counts: the
-- backfill below (the two new rollups; tool_outcome_daily is already exact and
-- kept as it is), and the way to build every rollup after a bulk load made
-- with the triggers disabled. Takes the locks that keep writers out meanwhile.
CREATE FUNCTION tool_outcome_rollups_rebuild(with_daily boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql AS $rebuild$
BEGIN
  LOCK TABLE runs, run_steps IN SHARE MODE;
  TRUNCATE tool_outcome_owner_daily, tool_outcome_hourly;
  IF with_daily THEN
  TRUNCATE tool_outcome_daily;
  INSERT INTO tool_outcome_daily (day, server, tool_name, ok, failed, cancelled, durations)
  SELECT day, server, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(ok + failed + cancelled))
    FROM (
      SELECT (s.occurred_at AT TIME ZONE 'UTC')::date AS day,
             coalesce(s.server, '') AS server, coalesce(s.tool_name, '') AS tool_name,
             tool_duration_bucket(s.duration_ms) AS b,
             count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'ok') AS ok,
             count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'failed') AS failed,
             count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'cancelled') AS cancelled
        FROM run_steps s
       WHERE s.kind = 'tool' AND stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) IS NOT NULL
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, server, tool_name;
  END IF;
INSERT INTO tool_outcome_owner_daily (day, owner, configuration, server, tool_name, ok, failed, cancelled, durations)
SELECT day, owner, configuration, server, tool_name, sum(ok), sum(failed), sum(cancelled),
       tool_duration_histogram(array_agg(b), array_agg(ok + failed + cancelled))
  FROM (
    SELECT (s.occurred_at AT TIME ZONE 'UTC')::date AS day, r.owner, r.configuration,
           coalesce(s.server, '') AS server, coalesce(s.tool_name, '') AS tool_name,
           tool_duration_bucket(s.duration_ms) AS b,
           count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'ok') AS ok,
           count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'failed') AS failed,
           count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'cancelled') AS cancelled
      FROM run_steps s JOIN runs r ON r.id = s.run_id
     WHERE s.kind = 'tool' AND stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) IS NOT NULL
     GROUP BY 1, 2, 3, 4, 5, 6
  ) AS by_bucket
 GROUP BY day, owner, configuration, server, tool_name;

INSERT INTO tool_outcome_hourly (hour, owner, configuration, server, tool_name, ok, failed, cancelled, durations)
SELECT hour, owner, configuration, server, tool_name, sum(ok), sum(failed), sum(cancelled),
       tool_duration_histogram(array_agg(b), array_agg(ok + failed + cancelled))
  FROM (
    SELECT date_trunc('hour', s.occurred_at, 'UTC') AS hour, r.owner, r.configuration,
           coalesce(s.server, '') AS server, coalesce(s.tool_name, '') AS tool_name,
           tool_duration_bucket(s.duration_ms) AS b,
           count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'ok') AS ok,
           count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'failed') AS failed,
           count(*) FILTER (WHERE stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) = 'cancelled') AS cancelled
      FROM run_steps s JOIN runs r ON r.id = s.run_id
     WHERE s.kind = 'tool' AND stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) IS NOT NULL
     GROUP BY 1, 2, 3, 4, 5, 6
  ) AS by_bucket
 GROUP BY hour, owner, configuration, server, tool_name;

END;
$rebuild$;

-- The calls already stored.
SELECT tool_outcome_rollups_rebuild(false);
ANALYZE tool_outcome_owner_daily;
ANALYZE tool_outcome_hourly;
