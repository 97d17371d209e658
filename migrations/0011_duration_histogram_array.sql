-- The duration histogram of tool_outcome_daily becomes one array column,
-- `durations bigint[]`: element b + 1 counts the calls in bucket b of
-- tool_duration_bucket (65 buckets, DURATION_BUCKETS in
-- src/domain/duration-histogram.ts), in place of the columns d0..d64.
--
-- The rollup is rebuilt as a new table (a dropped column would stay in every
-- old row on disk) and every row is carried over exactly. run_steps is locked
-- against writes first, so no write can be counted by the old trigger function
-- into the new table; reads go on. lock_timeout makes the migration give up
-- rather than queue behind a long transaction.
SET LOCAL lock_timeout = '5s';
LOCK TABLE run_steps IN SHARE MODE;

ALTER TABLE tool_outcome_daily RENAME TO tool_outcome_daily_by_column;
ALTER TABLE tool_outcome_daily_by_column RENAME CONSTRAINT tool_outcome_daily_pkey TO tool_outcome_daily_by_column_pkey;
ALTER INDEX tool_outcome_daily_server_idx RENAME TO tool_outcome_daily_by_column_server_idx;

CREATE TABLE tool_outcome_daily (
  day date NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint NOT NULL DEFAULT 0,
  failed bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0,
  durations bigint[] NOT NULL DEFAULT array_fill(0::bigint, ARRAY[65]),
  CONSTRAINT tool_outcome_daily_pkey PRIMARY KEY (day, server, tool_name),
  -- One count per bucket, none missing: an element-wise sum is exact only then.
  CONSTRAINT tool_outcome_daily_durations_shape CHECK (
    array_ndims(durations) = 1 AND array_lower(durations, 1) = 1 AND array_upper(durations, 1) = 65
    AND array_position(durations, NULL) IS NULL
  )
);
-- One server's days without reading every other server's.
CREATE INDEX tool_outcome_daily_server_idx ON tool_outcome_daily (server, day);

-- Each old row's buckets by name, read from the row as JSON (exact for bigint);
-- a missing bucket would be NULL, which the CHECK refuses.
INSERT INTO tool_outcome_daily (day, server, tool_name, ok, failed, cancelled, durations)
SELECT old.day, old.server, old.tool_name, old.ok, old.failed, old.cancelled,
       ARRAY(SELECT (to_jsonb(old) ->> ('d' || b))::bigint FROM generate_series(0, 64) AS b ORDER BY b)
  FROM tool_outcome_daily_by_column AS old;

DROP TABLE tool_outcome_daily_by_column;
ANALYZE tool_outcome_daily;

-- The histogram of (bucket, count) pairs with distinct buckets: counts in
-- place, zero elsewhere.
CREATE FUNCTION tool_duration_histogram(buckets integer[], counts bigint[])
RETURNS bigint[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  histogram bigint[] := array_fill(0::bigint, ARRAY[65]);
BEGIN
  FOR i IN 1 .. cardinality(buckets) LOOP
    histogram[buckets[i] + 1] := counts[i];
  END LOOP;
  RETURN histogram;
END;
$$;

-- Two histograms added element by element. Histograms of different lengths
-- give NULL elements, which the CHECK on the table refuses.
CREATE FUNCTION tool_duration_histogram_add(a bigint[], b bigint[])
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY(SELECT x + y FROM unnest(a, b) WITH ORDINALITY AS pair(x, y, i) ORDER BY i);

-- Restated whole, not edited in 0008: an applied migration is checksummed and
-- never changes. As in 0008, with the histogram as one array: the calls are counted per
-- (day, server, tool, bucket) first, then each group's buckets become one
-- histogram that is added to the stored one.
CREATE OR REPLACE FUNCTION tool_outcome_daily_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
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
  INSERT INTO tool_outcome_daily (day, server, tool_name, ok, failed, cancelled, durations)
  SELECT day, server, tool_name, sum(ok), sum(failed), sum(cancelled),
         tool_duration_histogram(array_agg(b), array_agg(calls))
    FROM (
      SELECT day, server, tool_name, b,
             sum(sign * (o = 'ok')::int) AS ok,
             sum(sign * (o = 'failed')::int) AS failed,
             sum(sign * (o = 'cancelled')::int) AS cancelled,
             sum(sign) AS calls
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
        ) AS call
       WHERE o IS NOT NULL
       GROUP BY day, server, tool_name, b
    ) AS by_bucket
   GROUP BY day, server, tool_name
   -- Keys in order, so concurrent writers do not lock rows crosswise.
   ORDER BY day, server, tool_name
  ON CONFLICT (day, server, tool_name) DO UPDATE SET
    ok = tool_outcome_daily.ok + excluded.ok,
    failed = tool_outcome_daily.failed + excluded.failed,
    cancelled = tool_outcome_daily.cancelled + excluded.cancelled,
    durations = tool_duration_histogram_add(tool_outcome_daily.durations, excluded.durations);
  RETURN NULL;
END;
$$;
