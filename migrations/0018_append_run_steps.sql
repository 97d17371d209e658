-- Appending steps to a run in one round trip. What the service did in eight
-- statements (lock the run, read its last sequence, look up the idempotency
-- key, insert the steps, claim the key, add the run's rollups, inside BEGIN
-- and COMMIT) is one call of this function, and one statement is one
-- transaction: all of it is stored, or none.
--
-- The function stores only what is plainly acceptable: a run that is open
-- (p_open_statuses, the domain's non-terminal statuses), owned by p_owner
-- (NULL: any owner), whose sequences and token totals stay within the limits
-- passed in. Anything else comes back as 'judge' with nothing written, and
-- the service decides by its own rules in a transaction of its own (a
-- cancelled run still takes the tool steps of calls already in flight; a
-- refusal needs its stable code). The rules stay in one place, the domain.
--
-- The rows go in through a plain INSERT, so every trigger on run_steps (the
-- rollups) and every CHECK constraint applies as it does to any writer.
--
-- p_key_hash, when given, is the hash of the API key the request came with:
-- the append is refused ('unauthenticated') unless that key is active when
-- the statement runs, so a key revoked by any process is refused from the
-- next request on even when the service remembered it.
CREATE FUNCTION append_run_steps(
  p_run_uuid uuid,
  p_owner text,
  p_key_hash text,
  p_idempotency_key text,
  p_fingerprint text,
  p_open_statuses text[],
  p_max_sequence bigint,
  p_max_run_tokens bigint,
  p_steps jsonb,
  p_rounds integer,
  p_prompt_tokens bigint,
  p_completion_tokens bigint,
  p_estimated_cost numeric
) RETURNS jsonb
LANGUAGE plpgsql AS $$
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
