-- A non-tool step never states an outcome, whatever its boolean says.
--
-- The boolean-first rule gains the step's kind: before, an `llm` row with
-- tool_is_error = true passed the CHECK constraints (which already refuse an
-- outcome on a non-tool step) and then read as `failed`. Now the rule, its
-- TypeScript twin statedOutcome() and the constraints say the same thing.
--
-- The daily rollup follows with one trigger function (it was three that
-- differed only in where their rows came from), and TRUNCATE run_steps
-- empties it, so it is never left counting rows that are gone.

CREATE FUNCTION stated_tool_outcome(kind text, tool_is_error boolean, tool_outcome text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN kind IS DISTINCT FROM 'tool' OR tool_is_error IS NULL THEN NULL
  WHEN tool_outcome IS NOT NULL THEN tool_outcome
  WHEN tool_is_error THEN 'failed'
  ELSE 'ok'
END;

-- The tool calls a statement touched, as the rollup needs them (never the payloads).
CREATE TYPE tool_call_change AS (
  kind text,
  occurred_at timestamp with time zone,
  server text,
  tool_name text,
  tool_is_error boolean,
  tool_outcome text,
  duration_ms integer
);

-- Adds the tool calls a statement inserted and removes those it deleted; an
-- update is both. Which transition tables exist depends on the operation, so
-- each is read only where it exists, and the one statement that counts is
-- written once. Its histogram columns d0..d64 are spelled out by this DO
-- block, so that the function holds plain SQL whose plan is kept.
DO $migration$
DECLARE
  buckets text;
  bucket_sums text;
  bucket_updates text;
BEGIN
  SELECT string_agg(format('d%s', b), ', ' ORDER BY b),
         string_agg(format('sum(sign * (b = %s)::int)::int', b), ', ' ORDER BY b),
         string_agg(format('d%1$s = tool_outcome_daily.d%1$s + excluded.d%1$s', b), ', ' ORDER BY b)
    INTO buckets, bucket_sums, bucket_updates
    FROM generate_series(0, 64) AS b;
  EXECUTE format($function$
CREATE FUNCTION tool_outcome_daily_follow() RETURNS trigger
LANGUAGE plpgsql AS $body$
DECLARE
  removed tool_call_change[];
  added tool_call_change[];
BEGIN
  IF TG_OP <> 'INSERT' THEN
    SELECT array_agg(ROW(kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms)::tool_call_change)
      INTO removed FROM old_steps WHERE kind = 'tool';
  END IF;
  IF TG_OP <> 'DELETE' THEN
    SELECT array_agg(ROW(kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms)::tool_call_change)
      INTO added FROM new_steps WHERE kind = 'tool';
  END IF;
  IF removed IS NULL AND added IS NULL THEN
    RETURN NULL;
  END IF;
  INSERT INTO tool_outcome_daily (day, server, tool_name, ok, failed, cancelled, %1$s)
  SELECT day, server, tool_name,
         sum(sign * (o = 'ok')::int)::int,
         sum(sign * (o = 'failed')::int)::int,
         sum(sign * (o = 'cancelled')::int)::int,
         %2$s
    FROM (
      SELECT (s.occurred_at AT TIME ZONE 'UTC')::date AS day,
             coalesce(s.server, '') AS server,
             coalesce(s.tool_name, '') AS tool_name,
             stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) AS o,
             tool_duration_bucket(s.duration_ms) AS b,
             s.sign
        FROM (SELECT r.*, -1 AS sign FROM unnest(removed) AS r
              UNION ALL
              SELECT a.*, 1 AS sign FROM unnest(added) AS a) AS s
    ) AS calls
   WHERE o IS NOT NULL
   GROUP BY day, server, tool_name
   -- Keys in order, so concurrent writers do not lock rows crosswise.
   ORDER BY day, server, tool_name
  ON CONFLICT (day, server, tool_name) DO UPDATE SET
    ok = tool_outcome_daily.ok + excluded.ok,
    failed = tool_outcome_daily.failed + excluded.failed,
    cancelled = tool_outcome_daily.cancelled + excluded.cancelled,
    %3$s;
  RETURN NULL;
END;
$body$
$function$, buckets, bucket_sums, bucket_updates);
END;
$migration$;

-- TRUNCATE has no transition table: the rollup is emptied with it, in the same transaction.
CREATE FUNCTION tool_outcome_daily_follow_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE tool_outcome_daily;
  RETURN NULL;
END;
$$;

DROP TRIGGER run_steps_follow_insert ON run_steps;
DROP TRIGGER run_steps_follow_update ON run_steps;
DROP TRIGGER run_steps_follow_delete ON run_steps;
DROP FUNCTION tool_outcome_daily_follow_insert();
DROP FUNCTION tool_outcome_daily_follow_update();
DROP FUNCTION tool_outcome_daily_follow_delete();
DROP FUNCTION stated_tool_outcome(boolean, text);

CREATE TRIGGER run_steps_follow_insert AFTER INSERT ON run_steps
  REFERENCING NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION tool_outcome_daily_follow();
CREATE TRIGGER run_steps_follow_update AFTER UPDATE ON run_steps
  REFERENCING OLD TABLE AS old_steps NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION tool_outcome_daily_follow();
CREATE TRIGGER run_steps_follow_delete AFTER DELETE ON run_steps
  REFERENCING OLD TABLE AS old_steps FOR EACH STATEMENT EXECUTE FUNCTION tool_outcome_daily_follow();
CREATE TRIGGER run_steps_follow_truncate AFTER TRUNCATE ON run_steps
  FOR EACH STATEMENT EXECUTE FUNCTION tool_outcome_daily_follow_truncate();
