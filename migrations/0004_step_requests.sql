-- Retries are safe: a step mutation sent again with the same idempotency key
-- returns the steps the first one stored. The key is scoped to its run; the
-- fingerprint tells a true retry from a different request reusing the key.
CREATE TABLE step_requests (
  run_id bigint NOT NULL,
  idempotency_key text NOT NULL,
  fingerprint text NOT NULL,
  first_sequence integer NOT NULL,
  step_count integer NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT step_requests_pkey PRIMARY KEY (run_id, idempotency_key),
  CONSTRAINT step_requests_run_id_runs_id_fk FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE,
  CONSTRAINT step_requests_steps_positive CHECK (first_sequence > 0 AND step_count >= 0)
);
