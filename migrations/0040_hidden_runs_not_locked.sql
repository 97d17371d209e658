-- A run of another owner is not found by the one-statement append, in the
-- same statement and without its row being locked, as a run that does not
-- exist: before, it was locked and handed to the judged path, a transaction
-- of its own, so the refusal took measurably longer than for a missing run.

CREATE OR REPLACE FUNCTION append_run_steps(p_run_uuid uuid, p_owner text, p_key_hash text, p_idempotency_key text, p_fingerprint text, p_open_statuses text[], p_max_sequence bigint, p_max_run_tokens bigint, p_steps jsonb, p_rounds integer, p_prompt_tokens bigint, p_completion_tokens bigint, p_estimated_cost numeric) RETURNS jsonb
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

  -- Appends to one run are serialised on its row. Another owner's run is
  -- filtered out before it is locked: it is not found, exactly as a run that
  -- does not exist, with the same statements and no lock taken.
  SELECT * INTO run FROM runs WHERE uuid = p_run_uuid AND (p_owner IS NULL OR owner = p_owner) FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('outcome', 'not_found');
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
