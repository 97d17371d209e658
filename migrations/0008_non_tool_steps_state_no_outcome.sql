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

-- Adds (sign 1) the tool calls a statement inserted and removes (sign -1)
-- those it deleted; an update is both. Which transition tables exist depends
-- on the operation, so the source is chosen here and the one statement that
-- counts is written once.
CREATE FUNCTION tool_outcome_daily_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  columns constant text := 'kind, occurred_at, server, tool_name, tool_is_error, tool_outcome, duration_ms';
  source text;
  buckets text;
  bucket_sums text;
  bucket_updates text;
BEGIN
  source := CASE TG_OP
    WHEN 'INSERT' THEN format('SELECT %s, 1 AS sign FROM new_steps', columns)
    WHEN 'DELETE' THEN format('SELECT %s, -1 AS sign FROM old_steps', columns)
    ELSE format('SELECT %1$s, -1 AS sign FROM old_steps UNION ALL SELECT %1$s, 1 AS sign FROM new_steps', columns)
  END;
  -- The histogram's columns d0..d64, one per tool_duration_bucket.
  SELECT string_agg(format('d%s', b), ', ' ORDER BY b),
         string_agg(format('sum(sign * (b = %s)::int)::int', b), ', ' ORDER BY b),
         string_agg(format('d%1$s = tool_outcome_daily.d%1$s + excluded.d%1$s', b), ', ' ORDER BY b)
    INTO buckets, bucket_sums, bucket_updates
    FROM generate_series(0, 64) AS b;
  EXECUTE format($sql$
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
          FROM (%4$s) AS s
      ) AS calls
     WHERE o IS NOT NULL
     GROUP BY day, server, tool_name
     -- Keys in order, so concurrent writers do not lock rows crosswise.
     ORDER BY day, server, tool_name
    ON CONFLICT (day, server, tool_name) DO UPDATE SET
      ok = tool_outcome_daily.ok + excluded.ok,
      failed = tool_outcome_daily.failed + excluded.failed,
      cancelled = tool_outcome_daily.cancelled + excluded.cancelled,
      %3$s
  $sql$, buckets, bucket_sums, bucket_updates, source);
  RETURN NULL;
END;
$$;

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
