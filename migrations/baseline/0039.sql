-- The schema after migration 0039_fold_tool_call_changes, printed by pg_dump from a database
-- migrated step by step (npm run migrations:baseline). Never edited by hand: a fresh database is
-- created from it in one step, and a test proves both paths end in the same schema.

-- Functions come before the tables their bodies name, as pg_dump orders them: not checked until run.
SET LOCAL check_function_bodies = false;

CREATE TYPE public.tool_call_cell AS (
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

CREATE TYPE public.tool_call_change AS (
	kind text,
	occurred_at timestamp with time zone,
	server text,
	tool_name text,
	tool_is_error boolean,
	tool_outcome text,
	duration_ms integer
);

CREATE TYPE public.tool_step_change AS (
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

CREATE FUNCTION public.append_run_steps(p_run_uuid uuid, p_owner text, p_key_hash text, p_idempotency_key text, p_fingerprint text, p_open_statuses text[], p_max_sequence bigint, p_max_run_tokens bigint, p_steps jsonb, p_rounds integer, p_prompt_tokens bigint, p_completion_tokens bigint, p_estimated_cost numeric) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
  run runs;
  seen step_requests;
  step_count integer := jsonb_array_length(p_steps);
  first_sequence bigint;
  stored jsonb := '[]'::jsonb;  -- the new steps' ids, in sequence order
BEGIN
  IF p_key_hash IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM api_keys WHERE key_hash = p_key_hash AND revoked_at IS NULL) THEN
    RETURN jsonb_build_object('outcome', 'unauthenticated');
  END IF;

  -- Appends to one run are serialised on its row.
  SELECT * INTO run FROM runs WHERE uuid = p_run_uuid FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('outcome', 'not_found');
  END IF;
  IF p_owner IS NOT NULL AND run.owner <> p_owner THEN
    RETURN jsonb_build_object('outcome', 'judge');
  END IF;

  IF p_idempotency_key IS NOT NULL THEN
    SELECT * INTO seen FROM step_requests WHERE run_id = run.id AND idempotency_key = p_idempotency_key;
    IF FOUND THEN
      RETURN jsonb_build_object(
        'outcome', 'replayed',
        'fingerprint', seen.fingerprint,
        'run', to_jsonb(run),
        'steps', (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.sequence), '[]'::jsonb)
                    FROM run_steps AS s
                   WHERE s.run_id = run.id
                     AND s.sequence >= seen.first_sequence
                     AND s.sequence < seen.first_sequence + seen.step_count));
    END IF;
  END IF;

  IF NOT (run.status = ANY (p_open_statuses))
     OR run.prompt_tokens + p_prompt_tokens > p_max_run_tokens
     OR run.completion_tokens + p_completion_tokens > p_max_run_tokens THEN
    RETURN jsonb_build_object('outcome', 'judge');
  END IF;

  -- A statement of its own, after the lock: a function's statements each take
  -- a new snapshot, so this one sees the steps the previous holder committed.
  SELECT coalesce(max(sequence), 0)::bigint + 1 INTO first_sequence FROM run_steps WHERE run_id = run.id;
  IF first_sequence + step_count - 1 > p_max_sequence THEN
    RETURN jsonb_build_object('outcome', 'judge');
  END IF;

  IF step_count > 0 THEN
    -- Only the ids come back: the caller has the rest of each row, as it sent it.
    WITH inserted AS (
      INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server,
                             tool_is_error, tool_outcome, payload, metadata)
      SELECT run.id, first_sequence + s.i - 1, s.kind, s.round, s.duration_ms, s.occurred_at, s.tool_name,
             s.server, s.tool_is_error, s.tool_outcome, coalesce(s.payload, '{}'::jsonb),
             coalesce(s.metadata, '{}'::jsonb)
        FROM ROWS FROM (jsonb_to_recordset(p_steps) AS (
               kind text, round integer, "durationMs" integer, "occurredAt" timestamptz, "toolName" text,
               server text, "toolIsError" boolean, "toolOutcome" text, payload jsonb, metadata jsonb))
             WITH ORDINALITY AS s(kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error,
                                  tool_outcome, payload, metadata, i)
       ORDER BY s.i
      RETURNING id, sequence
    )
    SELECT jsonb_agg(inserted.id ORDER BY inserted.sequence) INTO stored FROM inserted;
  END IF;

  IF p_idempotency_key IS NOT NULL THEN
    INSERT INTO step_requests (run_id, idempotency_key, fingerprint, first_sequence, step_count)
    VALUES (run.id, p_idempotency_key, p_fingerprint, first_sequence, step_count);
  END IF;

  IF step_count > 0 THEN
    UPDATE runs
       SET rounds = greatest(runs.rounds, p_rounds),
           prompt_tokens = runs.prompt_tokens + p_prompt_tokens,
           completion_tokens = runs.completion_tokens + p_completion_tokens,
           estimated_cost = runs.estimated_cost + p_estimated_cost
     WHERE id = run.id
    RETURNING * INTO run;
  END IF;

  RETURN jsonb_build_object('outcome', 'appended', 'run', to_jsonb(run), 'firstSequence', first_sequence,
                            'ids', stored);
END;
$$;

CREATE FUNCTION public.runs_delete_steps_first() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM run_steps WHERE run_id = OLD.id;
  RETURN OLD;
END;
$$;

CREATE FUNCTION public.runs_rekey_tool_calls() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.stated_tool_outcome(kind text, tool_is_error boolean, tool_outcome text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN ((kind IS DISTINCT FROM 'tool'::text) OR (tool_is_error IS NULL)) THEN NULL::text WHEN (tool_outcome IS NOT NULL) THEN tool_outcome WHEN tool_is_error THEN 'failed'::text ELSE 'ok'::text END;

CREATE FUNCTION public.tool_call_cells(steps public.tool_step_change[]) RETURNS public.tool_call_cell[]
    LANGUAGE sql STABLE
    AS $$
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

CREATE FUNCTION public.tool_call_changes_append(cells public.tool_call_cell[]) RETURNS void
    LANGUAGE sql
    AS $$
  INSERT INTO tool_call_changes (hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)
  SELECT c.hour, c.owner, c.configuration, c.server, c.tool_name, c.b, c.ok, c.failed, c.cancelled
    FROM unnest(cells) AS c
$$;

CREATE FUNCTION public.tool_call_changes_follow_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  TRUNCATE tool_call_changes;
  RETURN NULL;
END;
$$;

CREATE FUNCTION public.tool_duration_bucket(duration_ms integer) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN width_bucket(duration_ms, ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 18, 23, 28, 36, 44, 56, 69, 87, 108, 136, 169, 212, 265, 331, 414, 517, 646, 808, 1010, 1262, 1578, 1972, 2465, 3081, 3852, 4815, 6019, 7523, 9404, 11755, 14694, 18367, 22959, 28699, 35873, 44842, 56052, 70065, 87581, 109476, 136846, 171057, 213821, 267276, 334096, 417619, 522024, 652530, 815663, 1019579, 1274474]);

CREATE FUNCTION public.tool_duration_histogram(buckets integer[], counts bigint[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
  histogram bigint[] := array_fill(0::bigint, ARRAY[65]);
BEGIN
  FOR i IN 1 .. cardinality(buckets) LOOP
    histogram[buckets[i] + 1] := counts[i];
  END LOOP;
  RETURN histogram;
END;
$$;

CREATE FUNCTION public.tool_duration_histogram_add(a bigint[], b bigint[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ARRAY(SELECT (pair.x + pair.y) FROM UNNEST(tool_duration_histogram_add.a, tool_duration_histogram_add.b) WITH ORDINALITY pair(x, y, i) ORDER BY pair.i);

CREATE FUNCTION public.tool_outcome_daily_follow() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.tool_outcome_daily_follow_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  TRUNCATE tool_outcome_daily, tool_outcome_owner_daily, tool_outcome_owner_daily_durations, tool_outcome_hourly, tool_outcome_hourly_durations, tool_outcome_server_daily, tool_outcome_owner_configuration_daily, tool_outcome_owner_tool_daily, tool_outcome_owner_configuration_server_daily, tool_outcome_server_hourly, tool_outcome_owner_configuration_hourly, tool_outcome_owner_configuration_weekly, tool_outcome_owner_configuration_server_weekly, tool_outcome_owner_weekly, tool_outcome_owner_server_weekly, tool_outcome_configuration_server_weekly, tool_outcome_owner_tool_weekly, tool_outcome_server_tool_weekly, tool_outcome_configuration_tool_weekly, tool_outcome_owner_configuration_tool_weekly, tool_outcome_weekly, tool_outcome_all_time, tool_outcome_all_time_durations, tool_outcome_owner_server_tool_all_time, tool_outcome_configuration_server_tool_all_time, tool_outcome_owner_configuration_server_all_time, tool_outcome_owner_configuration_tool_all_time, tool_outcome_owner_server_all_time, tool_outcome_configuration_server_all_time;
  RETURN NULL;
END;
$$;

CREATE FUNCTION public.tool_outcome_rollups_add(cells public.tool_call_cell[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
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

  INSERT INTO tool_outcome_owner_daily (day, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.tool_name,
         sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (day, owner, configuration, server, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_daily.ok + excluded.ok,
    failed = tool_outcome_owner_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_daily.cancelled + excluded.cancelled;

  -- A zero sum changes no row: none is written for it.
  INSERT INTO tool_outcome_owner_daily_durations (day, owner, configuration, server, tool_name, duration_bucket, calls)
  SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.tool_name, c.b::smallint,
         sum(c.ok + c.failed + c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5, 6
  HAVING sum(c.ok + c.failed + c.cancelled) <> 0
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (day, owner, configuration, server, tool_name, duration_bucket) DO UPDATE SET
    calls = tool_outcome_owner_daily_durations.calls + excluded.calls;

  INSERT INTO tool_outcome_hourly (hour, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT c.hour AS hour, c.owner, c.configuration, c.server, c.tool_name,
         sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (hour, owner, configuration, server, tool_name) DO UPDATE SET
    ok = tool_outcome_hourly.ok + excluded.ok,
    failed = tool_outcome_hourly.failed + excluded.failed,
    cancelled = tool_outcome_hourly.cancelled + excluded.cancelled;

  -- A zero sum changes no row: none is written for it.
  INSERT INTO tool_outcome_hourly_durations (hour, owner, configuration, server, tool_name, duration_bucket, calls)
  SELECT c.hour AS hour, c.owner, c.configuration, c.server, c.tool_name, c.b::smallint,
         sum(c.ok + c.failed + c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5, 6
  HAVING sum(c.ok + c.failed + c.cancelled) <> 0
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (hour, owner, configuration, server, tool_name, duration_bucket) DO UPDATE SET
    calls = tool_outcome_hourly_durations.calls + excluded.calls;

  INSERT INTO tool_outcome_server_daily (day, server, ok, failed, cancelled, durations)
  SELECT day, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY day, server
   ORDER BY day, server
  ON CONFLICT (day, server) DO UPDATE SET
    ok = tool_outcome_server_daily.ok + excluded.ok,
    failed = tool_outcome_server_daily.failed + excluded.failed,
    cancelled = tool_outcome_server_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_server_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_daily (day, owner, configuration, ok, failed, cancelled, durations)
  SELECT day, owner, configuration, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, owner, configuration
   ORDER BY day, owner, configuration
  ON CONFLICT (day, owner, configuration) DO UPDATE SET
    ok = tool_outcome_owner_configuration_daily.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_tool_daily (day, owner, tool_name, ok, failed, cancelled, durations)
  SELECT day, owner, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY day, owner, tool_name
   ORDER BY day, owner, tool_name
  ON CONFLICT (day, owner, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_tool_daily.ok + excluded.ok,
    failed = tool_outcome_owner_tool_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_tool_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_tool_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_server_daily (day, owner, configuration, server, ok, failed, cancelled, durations)
  SELECT day, owner, configuration, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT (c.hour AT TIME ZONE 'UTC')::date AS day, c.owner, c.configuration, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY day, owner, configuration, server
   ORDER BY day, owner, configuration, server
  ON CONFLICT (day, owner, configuration, server) DO UPDATE SET
    ok = tool_outcome_owner_configuration_server_daily.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_server_daily.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_server_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_server_daily.durations, excluded.durations);

  INSERT INTO tool_outcome_server_hourly (hour, server, ok, failed, cancelled, durations)
  SELECT hour, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT c.hour, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY hour, server
   ORDER BY hour, server
  ON CONFLICT (hour, server) DO UPDATE SET
    ok = tool_outcome_server_hourly.ok + excluded.ok,
    failed = tool_outcome_server_hourly.failed + excluded.failed,
    cancelled = tool_outcome_server_hourly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_server_hourly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_hourly (hour, owner, configuration, ok, failed, cancelled, durations)
  SELECT hour, owner, configuration, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT c.hour, c.owner, c.configuration, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY hour, owner, configuration
   ORDER BY hour, owner, configuration
  ON CONFLICT (hour, owner, configuration) DO UPDATE SET
    ok = tool_outcome_owner_configuration_hourly.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_hourly.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_hourly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_hourly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_weekly (week, owner, configuration, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, configuration
   ORDER BY week, owner, configuration
  ON CONFLICT (week, owner, configuration) DO UPDATE SET
    ok = tool_outcome_owner_configuration_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_server_weekly (week, owner, configuration, server, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY week, owner, configuration, server
   ORDER BY week, owner, configuration, server
  ON CONFLICT (week, owner, configuration, server) DO UPDATE SET
    ok = tool_outcome_owner_configuration_server_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_server_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_server_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_weekly (week, owner, ok, failed, cancelled, durations)
  SELECT week, owner, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3
    ) AS by_bucket
   GROUP BY week, owner
   ORDER BY week, owner
  ON CONFLICT (week, owner) DO UPDATE SET
    ok = tool_outcome_owner_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_server_weekly (week, owner, server, ok, failed, cancelled, durations)
  SELECT week, owner, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, server
   ORDER BY week, owner, server
  ON CONFLICT (week, owner, server) DO UPDATE SET
    ok = tool_outcome_owner_server_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_server_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_server_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_configuration_server_weekly (week, configuration, server, ok, failed, cancelled, durations)
  SELECT week, configuration, server, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.configuration, c.server, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, configuration, server
   ORDER BY week, configuration, server
  ON CONFLICT (week, configuration, server) DO UPDATE SET
    ok = tool_outcome_configuration_server_weekly.ok + excluded.ok,
    failed = tool_outcome_configuration_server_weekly.failed + excluded.failed,
    cancelled = tool_outcome_configuration_server_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_configuration_server_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_tool_weekly (week, owner, tool_name, ok, failed, cancelled, durations)
  SELECT week, owner, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, owner, tool_name
   ORDER BY week, owner, tool_name
  ON CONFLICT (week, owner, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_tool_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_tool_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_tool_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_server_tool_weekly (week, server, tool_name, ok, failed, cancelled, durations)
  SELECT week, server, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.server, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, server, tool_name
   ORDER BY week, server, tool_name
  ON CONFLICT (week, server, tool_name) DO UPDATE SET
    ok = tool_outcome_server_tool_weekly.ok + excluded.ok,
    failed = tool_outcome_server_tool_weekly.failed + excluded.failed,
    cancelled = tool_outcome_server_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_server_tool_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_configuration_tool_weekly (week, configuration, tool_name, ok, failed, cancelled, durations)
  SELECT week, configuration, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.configuration, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4
    ) AS by_bucket
   GROUP BY week, configuration, tool_name
   ORDER BY week, configuration, tool_name
  ON CONFLICT (week, configuration, tool_name) DO UPDATE SET
    ok = tool_outcome_configuration_tool_weekly.ok + excluded.ok,
    failed = tool_outcome_configuration_tool_weekly.failed + excluded.failed,
    cancelled = tool_outcome_configuration_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_configuration_tool_weekly.durations, excluded.durations);

  INSERT INTO tool_outcome_owner_configuration_tool_weekly (week, owner, configuration, tool_name, ok, failed, cancelled, durations)
  SELECT week, owner, configuration, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.tool_name, c.b,
             sum(c.ok)::bigint AS ok, sum(c.failed)::bigint AS failed, sum(c.cancelled)::bigint AS cancelled,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY week, owner, configuration, tool_name
   ORDER BY week, owner, configuration, tool_name
  ON CONFLICT (week, owner, configuration, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_configuration_tool_weekly.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_tool_weekly.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_tool_weekly.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_owner_configuration_tool_weekly.durations, excluded.durations);
  INSERT INTO tool_outcome_weekly (week, owner, configuration, server, tool_name, ok, failed, cancelled)
  SELECT date_trunc('week', c.hour AT TIME ZONE 'UTC')::date AS week, c.owner, c.configuration, c.server, c.tool_name,
         sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (week, owner, configuration, server, tool_name) DO UPDATE SET
    ok = tool_outcome_weekly.ok + excluded.ok,
    failed = tool_outcome_weekly.failed + excluded.failed,
    cancelled = tool_outcome_weekly.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_all_time (server, tool_name, owner, configuration, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.owner, c.configuration,
         sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3, 4
   ORDER BY 1, 2, 3, 4
  ON CONFLICT (server, tool_name, owner, configuration) DO UPDATE SET
    ok = tool_outcome_all_time.ok + excluded.ok,
    failed = tool_outcome_all_time.failed + excluded.failed,
    cancelled = tool_outcome_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_all_time_durations (server, tool_name, owner, configuration, durations)
  SELECT server, tool_name, owner, configuration, tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT c.server, c.tool_name, c.owner, c.configuration, c.b,
             sum(c.ok + c.failed + c.cancelled)::bigint AS calls
        FROM unnest(cells) AS c
       GROUP BY 1, 2, 3, 4, 5
    ) AS by_bucket
   GROUP BY server, tool_name, owner, configuration
   ORDER BY server, tool_name, owner, configuration
  ON CONFLICT (server, tool_name, owner, configuration) DO UPDATE SET
    durations = tool_duration_histogram_add(tool_outcome_all_time_durations.durations, excluded.durations);
  INSERT INTO tool_outcome_owner_server_tool_all_time (server, tool_name, owner, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.owner, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (server, tool_name, owner) DO UPDATE SET
    ok = tool_outcome_owner_server_tool_all_time.ok + excluded.ok,
    failed = tool_outcome_owner_server_tool_all_time.failed + excluded.failed,
    cancelled = tool_outcome_owner_server_tool_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_configuration_server_tool_all_time (server, tool_name, configuration, ok, failed, cancelled)
  SELECT c.server, c.tool_name, c.configuration, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (server, tool_name, configuration) DO UPDATE SET
    ok = tool_outcome_configuration_server_tool_all_time.ok + excluded.ok,
    failed = tool_outcome_configuration_server_tool_all_time.failed + excluded.failed,
    cancelled = tool_outcome_configuration_server_tool_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_owner_configuration_server_all_time (owner, configuration, server, ok, failed, cancelled)
  SELECT c.owner, c.configuration, c.server, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (owner, configuration, server) DO UPDATE SET
    ok = tool_outcome_owner_configuration_server_all_time.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_server_all_time.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_server_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_owner_configuration_tool_all_time (owner, configuration, tool_name, ok, failed, cancelled)
  SELECT c.owner, c.configuration, c.tool_name, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (owner, configuration, tool_name) DO UPDATE SET
    ok = tool_outcome_owner_configuration_tool_all_time.ok + excluded.ok,
    failed = tool_outcome_owner_configuration_tool_all_time.failed + excluded.failed,
    cancelled = tool_outcome_owner_configuration_tool_all_time.cancelled + excluded.cancelled;
  INSERT INTO tool_outcome_owner_server_all_time (owner, server, ok, failed, cancelled)
  SELECT c.owner, c.server, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2
   ORDER BY 1, 2
  ON CONFLICT (owner, server) DO UPDATE SET
    ok = tool_outcome_owner_server_all_time.ok + excluded.ok,
    failed = tool_outcome_owner_server_all_time.failed + excluded.failed,
    cancelled = tool_outcome_owner_server_all_time.cancelled + excluded.cancelled;

  INSERT INTO tool_outcome_configuration_server_all_time (configuration, server, ok, failed, cancelled)
  SELECT c.configuration, c.server, sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint
    FROM unnest(cells) AS c
   GROUP BY 1, 2
   ORDER BY 1, 2
  ON CONFLICT (configuration, server) DO UPDATE SET
    ok = tool_outcome_configuration_server_all_time.ok + excluded.ok,
    failed = tool_outcome_configuration_server_all_time.failed + excluded.failed,
    cancelled = tool_outcome_configuration_server_all_time.cancelled + excluded.cancelled;
END;
$$;

CREATE FUNCTION public.tool_outcome_rollups_fold(max_changes integer) RETURNS integer
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.tool_outcome_rollups_rebuild() RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  LOCK TABLE runs, run_steps IN SHARE MODE;
  TRUNCATE tool_call_changes;
  PERFORM tool_outcome_rollups_recount();
END;
$$;

CREATE FUNCTION public.tool_outcome_rollups_recount() RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
  first_call timestamp with time zone;
  last_call timestamp with time zone;
  week_start timestamp with time zone;
BEGIN
  LOCK TABLE runs, run_steps IN SHARE MODE;
  TRUNCATE tool_outcome_daily, tool_outcome_owner_daily, tool_outcome_owner_daily_durations, tool_outcome_hourly, tool_outcome_hourly_durations, tool_outcome_server_daily, tool_outcome_owner_configuration_daily, tool_outcome_owner_tool_daily, tool_outcome_owner_configuration_server_daily, tool_outcome_server_hourly, tool_outcome_owner_configuration_hourly, tool_outcome_owner_configuration_weekly, tool_outcome_owner_configuration_server_weekly, tool_outcome_owner_weekly, tool_outcome_owner_server_weekly, tool_outcome_configuration_server_weekly, tool_outcome_owner_tool_weekly, tool_outcome_server_tool_weekly, tool_outcome_configuration_tool_weekly, tool_outcome_owner_configuration_tool_weekly, tool_outcome_weekly, tool_outcome_all_time, tool_outcome_all_time_durations, tool_outcome_owner_server_tool_all_time, tool_outcome_configuration_server_tool_all_time, tool_outcome_owner_configuration_server_all_time, tool_outcome_owner_configuration_tool_all_time, tool_outcome_owner_server_all_time, tool_outcome_configuration_server_all_time;
  SELECT min(occurred_at), max(occurred_at) INTO first_call, last_call FROM run_steps WHERE kind = 'tool';
  IF first_call IS NULL THEN
    RETURN;
  END IF;
  week_start := date_trunc('week', first_call, 'UTC');
  WHILE week_start <= last_call LOOP
    PERFORM tool_outcome_rollups_add((
      SELECT array_agg(ROW(hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)::tool_call_cell)
        FROM (
          SELECT date_trunc('hour', s.occurred_at, 'UTC') AS hour, r.owner, r.configuration,
                 coalesce(s.server, '') AS server, coalesce(s.tool_name, '') AS tool_name,
                 tool_duration_bucket(s.duration_ms) AS b,
                 count(*) FILTER (WHERE stated.o = 'ok') AS ok,
                 count(*) FILTER (WHERE stated.o = 'failed') AS failed,
                 count(*) FILTER (WHERE stated.o = 'cancelled') AS cancelled
            FROM run_steps s JOIN runs r ON r.id = s.run_id,
                 LATERAL (SELECT stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) AS o) AS stated
           WHERE s.kind = 'tool' AND s.occurred_at >= week_start AND s.occurred_at < week_start + interval '168 hours'
             AND stated.o IS NOT NULL
           GROUP BY 1, 2, 3, 4, 5, 6
        ) AS cell
    ));
    -- 168 hours, not a week: a UTC week, whatever the session's time zone.
    week_start := week_start + interval '168 hours';
  END LOOP;
END;
$$;

CREATE TABLE public.api_keys (
    id bigint NOT NULL,
    actor text NOT NULL,
    key_hash text NOT NULL,
    key_prefix text NOT NULL,
    permissions text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_permissions_known CHECK ((permissions <@ ARRAY['read_own_runs'::text, 'read_all_runs'::text, 'record'::text, 'cancel_own_runs'::text, 'cancel_any_run'::text, 'read_payloads'::text, 'manage_keys'::text, 'manage_servers'::text]))
);

ALTER TABLE public.api_keys ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.api_keys_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.mcp_servers (
    id bigint NOT NULL,
    identifier text NOT NULL,
    transport text NOT NULL,
    url text,
    command text,
    args text[] DEFAULT '{}'::text[] NOT NULL,
    last_contact_at timestamp with time zone,
    last_latency_ms integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    headers jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT mcp_servers_endpoint CHECK ((((transport = 'streamable-http'::text) = (url IS NOT NULL)) AND ((transport = 'stdio'::text) = (command IS NOT NULL)))),
    CONSTRAINT mcp_servers_headers_array CHECK ((jsonb_typeof(headers) = 'array'::text)),
    CONSTRAINT mcp_servers_stdio_headers CHECK (((transport = 'streamable-http'::text) OR (headers = '[]'::jsonb))),
    CONSTRAINT mcp_servers_transport_known CHECK ((transport = ANY (ARRAY['streamable-http'::text, 'stdio'::text])))
);

ALTER TABLE public.mcp_servers ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.mcp_servers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.otlp_spans (
    owner text NOT NULL,
    trace_id text NOT NULL,
    span_id text NOT NULL,
    run_id bigint NOT NULL,
    sequence integer,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT otlp_spans_ids_hex CHECK (((trace_id ~ '^[0-9a-f]{32}$'::text) AND (span_id ~ '^[0-9a-f]{16}$'::text)))
);

CREATE TABLE public.run_steps (
    id bigint NOT NULL,
    run_id bigint NOT NULL,
    sequence integer NOT NULL,
    kind text NOT NULL,
    round integer DEFAULT 0 NOT NULL,
    duration_ms integer DEFAULT 0 NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    tool_name text,
    server text,
    tool_is_error boolean,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    tool_outcome text,
    CONSTRAINT run_steps_duration_not_negative CHECK ((duration_ms >= 0)),
    CONSTRAINT run_steps_kind_known CHECK ((kind = ANY (ARRAY['request'::text, 'llm'::text, 'tool'::text, 'tool_write'::text, 'assembled'::text, 'context'::text, 'dropped'::text, 'approval'::text, 'input'::text]))),
    CONSTRAINT run_steps_round_not_negative CHECK ((round >= 0)),
    CONSTRAINT run_steps_sequence_positive CHECK ((sequence > 0)),
    CONSTRAINT run_steps_tool_outcome_agrees_with_is_error CHECK (((tool_outcome IS NULL) OR (NOT (tool_is_error IS DISTINCT FROM (tool_outcome <> 'ok'::text))))),
    CONSTRAINT run_steps_tool_outcome_known CHECK ((tool_outcome = ANY (ARRAY['ok'::text, 'failed'::text, 'cancelled'::text]))),
    CONSTRAINT run_steps_tool_outcome_only_on_tool_steps CHECK (((tool_outcome IS NULL) OR (kind = 'tool'::text)))
);

ALTER TABLE public.run_steps ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.run_steps_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.runs (
    id bigint NOT NULL,
    uuid uuid NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    status text NOT NULL,
    termination_reason text,
    rounds integer DEFAULT 0 NOT NULL,
    prompt_tokens bigint DEFAULT 0 NOT NULL,
    completion_tokens bigint DEFAULT 0 NOT NULL,
    estimated_cost numeric(22,6) DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    CONSTRAINT runs_counters_not_negative CHECK (((rounds >= 0) AND (prompt_tokens >= 0) AND (completion_tokens >= 0) AND (estimated_cost >= (0)::numeric))),
    CONSTRAINT runs_status_known CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'waiting_for_approval'::text, 'waiting_for_input'::text, 'completed'::text, 'failed'::text, 'cancelled'::text]))),
    CONSTRAINT runs_termination_reason_known CHECK ((termination_reason = ANY (ARRAY['completed'::text, 'max_iterations'::text, 'budget_exhausted'::text, 'policy_denied'::text, 'approval_denied'::text, 'provider_failed'::text, 'cancelled'::text, 'retries_exhausted'::text, 'not_retryable'::text, 'context_truncated'::text])))
);

ALTER TABLE public.runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.step_requests (
    run_id bigint NOT NULL,
    idempotency_key text NOT NULL,
    fingerprint text NOT NULL,
    first_sequence integer NOT NULL,
    step_count integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT step_requests_steps_positive CHECK (((first_sequence > 0) AND (step_count >= 0)))
);

CREATE TABLE public.tool_call_changes (
    id bigint NOT NULL,
    hour timestamp with time zone NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    tool_name text NOT NULL,
    b smallint NOT NULL,
    ok bigint NOT NULL,
    failed bigint NOT NULL,
    cancelled bigint NOT NULL
);

ALTER TABLE public.tool_call_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.tool_call_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.tool_outcome_all_time (
    server text NOT NULL,
    tool_name text NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_all_time_durations (
    server text NOT NULL,
    tool_name text NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_all_time_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL)))
);

CREATE TABLE public.tool_outcome_configuration_server_all_time (
    configuration text NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_configuration_server_tool_all_time (
    server text NOT NULL,
    tool_name text NOT NULL,
    configuration text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_configuration_server_weekly (
    week date NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_configuration_server_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_configuration_server_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_configuration_tool_weekly (
    week date NOT NULL,
    configuration text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_configuration_tool_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_configuration_tool_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_daily (
    day date NOT NULL,
    server text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_daily_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL)))
);

CREATE TABLE public.tool_outcome_hourly (
    hour timestamp with time zone NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_hourly_durations (
    hour timestamp with time zone NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    tool_name text NOT NULL,
    duration_bucket smallint NOT NULL,
    calls bigint DEFAULT 0 NOT NULL,
    CONSTRAINT tool_outcome_hourly_durations_bucket CHECK (((duration_bucket >= 0) AND (duration_bucket <= 64)))
);

CREATE TABLE public.tool_outcome_owner_configuration_daily (
    day date NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_configuration_daily_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL)))
);

CREATE TABLE public.tool_outcome_owner_configuration_hourly (
    hour timestamp with time zone NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_configuration_hourly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL)))
);

CREATE TABLE public.tool_outcome_owner_configuration_server_all_time (
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_owner_configuration_server_daily (
    day date NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_configuration_server_daily_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL)))
);

CREATE TABLE public.tool_outcome_owner_configuration_server_weekly (
    week date NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_configuration_server_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_owner_configuration_server_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_owner_configuration_tool_all_time (
    owner text NOT NULL,
    configuration text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_owner_configuration_tool_weekly (
    week date NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_configuration_tool_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_owner_configuration_tool_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_owner_configuration_weekly (
    week date NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_configuration_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_owner_configuration_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_owner_daily (
    day date NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_owner_daily_durations (
    day date NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    tool_name text NOT NULL,
    duration_bucket smallint NOT NULL,
    calls bigint DEFAULT 0 NOT NULL,
    CONSTRAINT tool_outcome_owner_daily_durations_bucket CHECK (((duration_bucket >= 0) AND (duration_bucket <= 64)))
);

CREATE TABLE public.tool_outcome_owner_server_all_time (
    owner text NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_owner_server_tool_all_time (
    server text NOT NULL,
    tool_name text NOT NULL,
    owner text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.tool_outcome_owner_server_weekly (
    week date NOT NULL,
    owner text NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_server_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_owner_server_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_owner_tool_daily (
    day date NOT NULL,
    owner text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_tool_daily_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL)))
);

CREATE TABLE public.tool_outcome_owner_tool_weekly (
    week date NOT NULL,
    owner text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_tool_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_owner_tool_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_owner_weekly (
    week date NOT NULL,
    owner text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_owner_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_owner_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_server_daily (
    day date NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_server_daily_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL)))
);

CREATE TABLE public.tool_outcome_server_hourly (
    hour timestamp with time zone NOT NULL,
    server text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_server_hourly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL)))
);

CREATE TABLE public.tool_outcome_server_tool_weekly (
    week date NOT NULL,
    server text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    durations bigint[] DEFAULT array_fill((0)::bigint, ARRAY[65]) NOT NULL,
    CONSTRAINT tool_outcome_server_tool_weekly_durations_shape CHECK (((array_ndims(durations) = 1) AND (array_lower(durations, 1) = 1) AND (array_upper(durations, 1) = 65) AND (array_position(durations, NULL::bigint) IS NULL))),
    CONSTRAINT tool_outcome_server_tool_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

CREATE TABLE public.tool_outcome_weekly (
    week date NOT NULL,
    owner text NOT NULL,
    configuration text NOT NULL,
    server text NOT NULL,
    tool_name text NOT NULL,
    ok bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    CONSTRAINT tool_outcome_weekly_monday CHECK ((EXTRACT(isodow FROM week) = (1)::numeric))
);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_key_hash_unique UNIQUE (key_hash);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.mcp_servers
    ADD CONSTRAINT mcp_servers_identifier_unique UNIQUE (identifier);

ALTER TABLE ONLY public.mcp_servers
    ADD CONSTRAINT mcp_servers_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.run_steps
    ADD CONSTRAINT run_steps_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_uuid_unique UNIQUE (uuid);

ALTER TABLE ONLY public.step_requests
    ADD CONSTRAINT step_requests_pkey PRIMARY KEY (run_id, idempotency_key);

ALTER TABLE ONLY public.tool_call_changes
    ADD CONSTRAINT tool_call_changes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.tool_outcome_all_time_durations
    ADD CONSTRAINT tool_outcome_all_time_durations_pkey PRIMARY KEY (server, tool_name, owner, configuration);

ALTER TABLE ONLY public.tool_outcome_all_time
    ADD CONSTRAINT tool_outcome_all_time_pkey PRIMARY KEY (server, tool_name, owner, configuration);

ALTER TABLE ONLY public.tool_outcome_configuration_server_all_time
    ADD CONSTRAINT tool_outcome_configuration_server_all_time_pkey PRIMARY KEY (configuration, server);

ALTER TABLE ONLY public.tool_outcome_configuration_server_tool_all_time
    ADD CONSTRAINT tool_outcome_configuration_server_tool_all_time_pkey PRIMARY KEY (server, tool_name, configuration);

ALTER TABLE ONLY public.tool_outcome_configuration_server_weekly
    ADD CONSTRAINT tool_outcome_configuration_server_weekly_pkey PRIMARY KEY (week, configuration, server);

ALTER TABLE ONLY public.tool_outcome_configuration_tool_weekly
    ADD CONSTRAINT tool_outcome_configuration_tool_weekly_pkey PRIMARY KEY (week, configuration, tool_name);

ALTER TABLE ONLY public.tool_outcome_daily
    ADD CONSTRAINT tool_outcome_daily_pkey PRIMARY KEY (day, server, tool_name);

ALTER TABLE ONLY public.tool_outcome_hourly_durations
    ADD CONSTRAINT tool_outcome_hourly_durations_pkey PRIMARY KEY (hour, owner, configuration, server, tool_name, duration_bucket);

ALTER TABLE ONLY public.tool_outcome_hourly
    ADD CONSTRAINT tool_outcome_hourly_pkey PRIMARY KEY (hour, owner, configuration, server, tool_name);

ALTER TABLE public.tool_outcome_hourly CLUSTER ON tool_outcome_hourly_pkey;

ALTER TABLE ONLY public.tool_outcome_owner_configuration_daily
    ADD CONSTRAINT tool_outcome_owner_configuration_daily_pkey PRIMARY KEY (day, owner, configuration);

ALTER TABLE ONLY public.tool_outcome_owner_configuration_hourly
    ADD CONSTRAINT tool_outcome_owner_configuration_hourly_pkey PRIMARY KEY (hour, owner, configuration);

ALTER TABLE ONLY public.tool_outcome_owner_configuration_server_all_time
    ADD CONSTRAINT tool_outcome_owner_configuration_server_all_time_pkey PRIMARY KEY (owner, configuration, server);

ALTER TABLE ONLY public.tool_outcome_owner_configuration_server_daily
    ADD CONSTRAINT tool_outcome_owner_configuration_server_daily_pkey PRIMARY KEY (day, owner, configuration, server);

ALTER TABLE ONLY public.tool_outcome_owner_configuration_server_weekly
    ADD CONSTRAINT tool_outcome_owner_configuration_server_weekly_pkey PRIMARY KEY (week, owner, configuration, server);

ALTER TABLE ONLY public.tool_outcome_owner_configuration_tool_all_time
    ADD CONSTRAINT tool_outcome_owner_configuration_tool_all_time_pkey PRIMARY KEY (owner, configuration, tool_name);

ALTER TABLE ONLY public.tool_outcome_owner_configuration_tool_weekly
    ADD CONSTRAINT tool_outcome_owner_configuration_tool_weekly_pkey PRIMARY KEY (week, owner, configuration, tool_name);

ALTER TABLE ONLY public.tool_outcome_owner_configuration_weekly
    ADD CONSTRAINT tool_outcome_owner_configuration_weekly_pkey PRIMARY KEY (week, owner, configuration);

ALTER TABLE ONLY public.tool_outcome_owner_daily_durations
    ADD CONSTRAINT tool_outcome_owner_daily_durations_pkey PRIMARY KEY (day, owner, configuration, server, tool_name, duration_bucket);

ALTER TABLE ONLY public.tool_outcome_owner_daily
    ADD CONSTRAINT tool_outcome_owner_daily_pkey PRIMARY KEY (day, owner, configuration, server, tool_name);

ALTER TABLE public.tool_outcome_owner_daily CLUSTER ON tool_outcome_owner_daily_pkey;

ALTER TABLE ONLY public.tool_outcome_owner_server_all_time
    ADD CONSTRAINT tool_outcome_owner_server_all_time_pkey PRIMARY KEY (owner, server);

ALTER TABLE ONLY public.tool_outcome_owner_server_tool_all_time
    ADD CONSTRAINT tool_outcome_owner_server_tool_all_time_pkey PRIMARY KEY (server, tool_name, owner);

ALTER TABLE ONLY public.tool_outcome_owner_server_weekly
    ADD CONSTRAINT tool_outcome_owner_server_weekly_pkey PRIMARY KEY (week, owner, server);

ALTER TABLE ONLY public.tool_outcome_owner_tool_daily
    ADD CONSTRAINT tool_outcome_owner_tool_daily_pkey PRIMARY KEY (day, owner, tool_name);

ALTER TABLE ONLY public.tool_outcome_owner_tool_weekly
    ADD CONSTRAINT tool_outcome_owner_tool_weekly_pkey PRIMARY KEY (week, owner, tool_name);

ALTER TABLE ONLY public.tool_outcome_owner_weekly
    ADD CONSTRAINT tool_outcome_owner_weekly_pkey PRIMARY KEY (week, owner);

ALTER TABLE ONLY public.tool_outcome_server_daily
    ADD CONSTRAINT tool_outcome_server_daily_pkey PRIMARY KEY (day, server);

ALTER TABLE ONLY public.tool_outcome_server_hourly
    ADD CONSTRAINT tool_outcome_server_hourly_pkey PRIMARY KEY (hour, server);

ALTER TABLE ONLY public.tool_outcome_server_tool_weekly
    ADD CONSTRAINT tool_outcome_server_tool_weekly_pkey PRIMARY KEY (week, server, tool_name);

ALTER TABLE ONLY public.tool_outcome_weekly
    ADD CONSTRAINT tool_outcome_weekly_pkey PRIMARY KEY (week, owner, configuration, server, tool_name);

CREATE UNIQUE INDEX otlp_spans_owner_trace_span_unique ON public.otlp_spans USING btree (owner, trace_id, span_id);

CREATE INDEX otlp_spans_run_id_idx ON public.otlp_spans USING btree (run_id);

CREATE INDEX run_steps_occurred_at_idx ON public.run_steps USING btree (occurred_at);

CREATE UNIQUE INDEX run_steps_run_id_sequence_unique ON public.run_steps USING btree (run_id, sequence);

CREATE INDEX run_steps_tool_calls_by_server_idx ON public.run_steps USING btree (server, occurred_at) WHERE (kind = 'tool'::text);

CREATE INDEX run_steps_tool_calls_idx ON public.run_steps USING btree (occurred_at) WHERE (kind = 'tool'::text);

CREATE INDEX runs_created_at_idx ON public.runs USING btree (created_at DESC NULLS LAST, id DESC NULLS LAST);

CREATE INDEX runs_owner_created_at_idx ON public.runs USING btree (owner, created_at DESC NULLS LAST, id DESC NULLS LAST);

CREATE INDEX tool_outcome_all_time_calls_idx ON public.tool_outcome_all_time USING btree ((((ok + failed) + cancelled)));

CREATE INDEX tool_outcome_all_time_fail_rate_idx ON public.tool_outcome_all_time USING btree (COALESCE(((failed)::double precision / NULLIF(((ok)::double precision + (failed)::double precision), (0)::double precision)), '-Infinity'::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_all_time_failures_idx ON public.tool_outcome_all_time USING btree (((failed)::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_all_time_key_order_idx ON public.tool_outcome_all_time USING btree (server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_configuration_server_all_time_calls_idx ON public.tool_outcome_configuration_server_all_time USING btree ((((ok + failed) + cancelled)));

CREATE INDEX tool_outcome_configuration_server_all_time_key_order_idx ON public.tool_outcome_configuration_server_all_time USING btree (server COLLATE "C", configuration COLLATE "C");

CREATE INDEX tool_outcome_configuration_server_tool_all_time_calls_idx ON public.tool_outcome_configuration_server_tool_all_time USING btree ((((ok + failed) + cancelled)));

CREATE INDEX tool_outcome_configuration_server_tool_all_time_fail_rate_idx ON public.tool_outcome_configuration_server_tool_all_time USING btree (COALESCE(((failed)::double precision / NULLIF(((ok)::double precision + (failed)::double precision), (0)::double precision)), '-Infinity'::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");

CREATE INDEX tool_outcome_configuration_server_tool_all_time_failures_idx ON public.tool_outcome_configuration_server_tool_all_time USING btree (((failed)::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");

CREATE INDEX tool_outcome_configuration_server_tool_all_time_key_order_idx ON public.tool_outcome_configuration_server_tool_all_time USING btree (server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");

CREATE INDEX tool_outcome_configuration_server_weekly_group_idx ON public.tool_outcome_configuration_server_weekly USING btree (configuration, server, week, ok, failed, cancelled);

CREATE INDEX tool_outcome_daily_server_idx ON public.tool_outcome_daily USING btree (server, day);

CREATE INDEX tool_outcome_hourly_durations_owner_idx ON public.tool_outcome_hourly_durations USING btree (owner, hour);

CREATE INDEX tool_outcome_hourly_owner_idx ON public.tool_outcome_hourly USING btree (owner, hour);

CREATE INDEX tool_outcome_owner_configuration_daily_owner_idx ON public.tool_outcome_owner_configuration_daily USING btree (owner, day);

CREATE INDEX tool_outcome_owner_configuration_hourly_owner_idx ON public.tool_outcome_owner_configuration_hourly USING btree (owner, hour);

CREATE INDEX tool_outcome_owner_configuration_server_all_time_calls_idx ON public.tool_outcome_owner_configuration_server_all_time USING btree ((((ok + failed) + cancelled)));

CREATE INDEX tool_outcome_owner_configuration_server_all_time_key_order_idx ON public.tool_outcome_owner_configuration_server_all_time USING btree (server COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_owner_configuration_server_daily_owner_idx ON public.tool_outcome_owner_configuration_server_daily USING btree (owner, day);

CREATE INDEX tool_outcome_owner_configuration_server_weekly_group_idx ON public.tool_outcome_owner_configuration_server_weekly USING btree (owner, configuration, server, week, ok, failed, cancelled);

CREATE INDEX tool_outcome_owner_configuration_tool_all_time_calls_idx ON public.tool_outcome_owner_configuration_tool_all_time USING btree ((((ok + failed) + cancelled)));

CREATE INDEX tool_outcome_owner_configuration_tool_all_time_key_order_idx ON public.tool_outcome_owner_configuration_tool_all_time USING btree (tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_owner_configuration_tool_weekly_group_idx ON public.tool_outcome_owner_configuration_tool_weekly USING btree (owner, configuration, tool_name, week, ok, failed, cancelled);

CREATE INDEX tool_outcome_owner_configuration_weekly_owner_idx ON public.tool_outcome_owner_configuration_weekly USING btree (owner, week);

CREATE INDEX tool_outcome_owner_daily_configuration_group_idx ON public.tool_outcome_owner_daily USING btree (configuration, server, tool_name, day, owner, ok, failed, cancelled);

CREATE INDEX tool_outcome_owner_daily_durations_configuration_group_idx ON public.tool_outcome_owner_daily_durations USING btree (configuration, server, tool_name, day, owner, duration_bucket, calls);

CREATE INDEX tool_outcome_owner_daily_durations_group_idx ON public.tool_outcome_owner_daily_durations USING btree (owner, server, tool_name, configuration, day, duration_bucket, calls);

CREATE INDEX tool_outcome_owner_daily_durations_tool_day_idx ON public.tool_outcome_owner_daily_durations USING btree (owner, server, tool_name, day, duration_bucket, calls);

CREATE INDEX tool_outcome_owner_daily_group_idx ON public.tool_outcome_owner_daily USING btree (owner, server, tool_name, configuration, day, ok, failed, cancelled);

CREATE INDEX tool_outcome_owner_server_all_time_calls_idx ON public.tool_outcome_owner_server_all_time USING btree ((((ok + failed) + cancelled)));

CREATE INDEX tool_outcome_owner_server_all_time_key_order_idx ON public.tool_outcome_owner_server_all_time USING btree (server COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_owner_server_tool_all_time_calls_idx ON public.tool_outcome_owner_server_tool_all_time USING btree ((((ok + failed) + cancelled)));

CREATE INDEX tool_outcome_owner_server_tool_all_time_fail_rate_idx ON public.tool_outcome_owner_server_tool_all_time USING btree (COALESCE(((failed)::double precision / NULLIF(((ok)::double precision + (failed)::double precision), (0)::double precision)), '-Infinity'::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_owner_server_tool_all_time_failures_idx ON public.tool_outcome_owner_server_tool_all_time USING btree (((failed)::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_owner_server_tool_all_time_key_order_idx ON public.tool_outcome_owner_server_tool_all_time USING btree (server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");

CREATE INDEX tool_outcome_owner_server_weekly_group_idx ON public.tool_outcome_owner_server_weekly USING btree (owner, server, week, ok, failed, cancelled);

CREATE INDEX tool_outcome_owner_tool_daily_owner_idx ON public.tool_outcome_owner_tool_daily USING btree (owner, day);

CREATE INDEX tool_outcome_owner_tool_weekly_owner_idx ON public.tool_outcome_owner_tool_weekly USING btree (owner, week);

CREATE INDEX tool_outcome_owner_weekly_owner_idx ON public.tool_outcome_owner_weekly USING btree (owner, week);

CREATE TRIGGER run_steps_changes_follow_truncate AFTER TRUNCATE ON public.run_steps FOR EACH STATEMENT EXECUTE FUNCTION public.tool_call_changes_follow_truncate();

CREATE TRIGGER run_steps_follow_delete AFTER DELETE ON public.run_steps REFERENCING OLD TABLE AS old_steps FOR EACH STATEMENT EXECUTE FUNCTION public.tool_outcome_daily_follow();

CREATE TRIGGER run_steps_follow_insert AFTER INSERT ON public.run_steps REFERENCING NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION public.tool_outcome_daily_follow();

CREATE TRIGGER run_steps_follow_truncate AFTER TRUNCATE ON public.run_steps FOR EACH STATEMENT EXECUTE FUNCTION public.tool_outcome_daily_follow_truncate();

CREATE TRIGGER run_steps_follow_update AFTER UPDATE ON public.run_steps REFERENCING OLD TABLE AS old_steps NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION public.tool_outcome_daily_follow();

CREATE TRIGGER runs_delete_steps_first BEFORE DELETE ON public.runs FOR EACH ROW EXECUTE FUNCTION public.runs_delete_steps_first();

CREATE TRIGGER runs_rekey_tool_calls AFTER UPDATE OF owner, configuration ON public.runs FOR EACH ROW WHEN (((old.owner IS DISTINCT FROM new.owner) OR (old.configuration IS DISTINCT FROM new.configuration))) EXECUTE FUNCTION public.runs_rekey_tool_calls();

ALTER TABLE ONLY public.otlp_spans
    ADD CONSTRAINT otlp_spans_run_id_runs_id_fk FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.run_steps
    ADD CONSTRAINT run_steps_run_id_runs_id_fk FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.step_requests
    ADD CONSTRAINT step_requests_run_id_runs_id_fk FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;
