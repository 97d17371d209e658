-- A tool step states which outcome it had: ok, failed or cancelled.
--
-- The column is nullable and nothing is backfilled: rows written before it
-- keep their outcome through the boolean-first rule below. Adding a nullable
-- column without a default and NOT VALID constraints touches no existing row,
-- so the ACCESS EXCLUSIVE lock lasts only for the catalog change; lock_timeout
-- makes the migration give up rather than queue behind a long transaction.
-- The constraints are validated by the next migration, under a lock that lets
-- reads and writes go on.
SET LOCAL lock_timeout = '5s';

ALTER TABLE run_steps ADD COLUMN tool_outcome text;

ALTER TABLE run_steps ADD CONSTRAINT run_steps_tool_outcome_known
  CHECK (tool_outcome IN ('ok', 'failed', 'cancelled')) NOT VALID;

ALTER TABLE run_steps ADD CONSTRAINT run_steps_tool_outcome_only_on_tool_steps
  CHECK (tool_outcome IS NULL OR kind = 'tool') NOT VALID;

-- ok needs false; failed and cancelled need true. IS NOT DISTINCT FROM, not =,
-- so that an outcome beside a NULL boolean is refused instead of passing as NULL.
ALTER TABLE run_steps ADD CONSTRAINT run_steps_tool_outcome_agrees_with_is_error
  CHECK (tool_outcome IS NULL OR tool_is_error IS NOT DISTINCT FROM (tool_outcome <> 'ok')) NOT VALID;

-- The boolean-first rule, the one SQL definition every filter and aggregation
-- uses: tool_is_error decides WHETHER a step states an outcome, tool_outcome
-- decides WHICH. Its TypeScript twin is statedOutcome() in src/domain.
CREATE FUNCTION stated_tool_outcome(tool_is_error boolean, tool_outcome text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN tool_is_error IS NULL THEN NULL
  WHEN tool_outcome IS NOT NULL THEN tool_outcome
  WHEN tool_is_error THEN 'failed'
  ELSE 'ok'
END;
