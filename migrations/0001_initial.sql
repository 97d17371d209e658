-- runledger as it stood before tool outcomes existed: a tool step carried only
-- the boolean tool_is_error.

CREATE TABLE runs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid uuid NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  status text NOT NULL,
  termination_reason text,
  rounds integer NOT NULL DEFAULT 0,
  prompt_tokens bigint NOT NULL DEFAULT 0,
  completion_tokens bigint NOT NULL DEFAULT 0,
  estimated_cost numeric(18, 6) NOT NULL DEFAULT 0,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  started_at timestamp with time zone,
  finished_at timestamp with time zone,
  CONSTRAINT runs_uuid_unique UNIQUE (uuid),
  CONSTRAINT runs_status_known CHECK (status IN ('queued', 'running', 'waiting_for_approval', 'waiting_for_input', 'completed', 'failed', 'cancelled')),
  CONSTRAINT runs_termination_reason_known CHECK (termination_reason IN ('completed', 'max_iterations', 'budget_exhausted', 'policy_denied', 'approval_denied', 'provider_failed', 'cancelled', 'retries_exhausted', 'not_retryable', 'context_truncated')),
  CONSTRAINT runs_counters_not_negative CHECK (rounds >= 0 AND prompt_tokens >= 0 AND completion_tokens >= 0 AND estimated_cost >= 0)
);

CREATE INDEX runs_created_at_idx ON runs (created_at DESC NULLS LAST, id DESC NULLS LAST);
CREATE INDEX runs_owner_created_at_idx ON runs (owner, created_at DESC NULLS LAST, id DESC NULLS LAST);

CREATE TABLE run_steps (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id bigint NOT NULL,
  sequence integer NOT NULL,
  kind text NOT NULL,
  round integer NOT NULL DEFAULT 0,
  duration_ms integer NOT NULL DEFAULT 0,
  occurred_at timestamp with time zone NOT NULL,
  tool_name text,
  server text,
  tool_is_error boolean,
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  CONSTRAINT run_steps_run_id_runs_id_fk FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE,
  CONSTRAINT run_steps_kind_known CHECK (kind IN ('request', 'llm', 'tool', 'tool_write', 'assembled', 'context', 'dropped', 'approval', 'input')),
  CONSTRAINT run_steps_sequence_positive CHECK (sequence > 0),
  CONSTRAINT run_steps_round_not_negative CHECK (round >= 0),
  CONSTRAINT run_steps_duration_not_negative CHECK (duration_ms >= 0)
);

-- Sequences are unique per run; the index also serves reading a run's steps in order.
CREATE UNIQUE INDEX run_steps_run_id_sequence_unique ON run_steps (run_id, sequence);
CREATE INDEX run_steps_occurred_at_idx ON run_steps (occurred_at);
