-- The append of steps to a run, the one statement through which every client append writes
-- (src/ledger/record-steps.ts): the request's key still active, the run found among the writer's own
-- and locked, a retry key's earlier answer, the steps numbered after the last one stored, the key
-- claimed, the run's totals added. Which steps a run takes is the domain's rule (TypeScript), not
-- stated here. p_mode:
-- - 'append': a run in one of p_open_statuses, whose totals and sequences stay within the limits
--   passed, takes the steps at once (any steps the domain built are valid in an open run); any other
--   run is answered 'judge', nothing written;
-- - 'hold': nothing written; the run locked for the rest of the transaction and answered 'judge' with
--   the sequence its next step takes, for the caller to apply the rules to;
-- - 'judged': the steps the caller judged, in the same transaction, numbered from the sequence 'hold'
--   answered (carried by the first step; a step numbered otherwise is an error, not a silent renumbering).
DROP FUNCTION IF EXISTS append_run_steps(uuid, text, text, text, text, text[], bigint, bigint, jsonb, integer, bigint, bigint, numeric);

CREATE OR REPLACE FUNCTION append_run_steps(p_mode text, p_run_uuid uuid, p_owner text, p_key_hash text,
                                            p_idempotency_key text, p_fingerprint text, p_open_statuses text[],
                                            p_max_sequence bigint, p_max_run_tokens bigint, p_steps jsonb,
                                            p_rounds integer, p_prompt_tokens bigint, p_completion_tokens bigint,
                                            p_estimated_cost numeric) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  run runs;
  seen step_requests;
  step_count integer := jsonb_array_length(p_steps);
  first_sequence bigint;
  stored jsonb := '[]'::jsonb;  -- the new steps' ids, in sequence order
BEGIN
  IF p_mode NOT IN ('append', 'hold', 'judged') THEN
    RAISE EXCEPTION 'append_run_steps: no mode %', p_mode;
  END IF;
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

  IF p_mode = 'append'
     AND (NOT (run.status = ANY (p_open_statuses))
          OR run.prompt_tokens + p_prompt_tokens > p_max_run_tokens
          OR run.completion_tokens + p_completion_tokens > p_max_run_tokens) THEN
    RETURN jsonb_build_object('outcome', 'judge');
  END IF;

  -- A statement of its own, after the lock: a function's statements each take
  -- a new snapshot, so this one sees the steps the previous holder committed.
  SELECT coalesce(max(sequence), 0)::bigint + 1 INTO first_sequence FROM run_steps WHERE run_id = run.id;
  IF p_mode = 'hold' THEN
    RETURN jsonb_build_object('outcome', 'judge', 'run', to_jsonb(run), 'firstSequence', first_sequence);
  END IF;
  IF p_mode = 'append' AND first_sequence + step_count - 1 > p_max_sequence THEN
    RETURN jsonb_build_object('outcome', 'judge');
  END IF;
  IF p_mode = 'judged' AND step_count > 0 AND (p_steps->0->>'sequence')::bigint IS DISTINCT FROM first_sequence THEN
    RAISE EXCEPTION 'append_run_steps: steps judged from sequence %, the run''s next is %',
      p_steps->0->>'sequence', first_sequence;
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
