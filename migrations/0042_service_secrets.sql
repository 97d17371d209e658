-- Secrets of the service itself, each made once on first use by whichever
-- instance gets there first. `otlp_run_ids` keys the run ids derived from a
-- sender's trace and conversation ids: trace ids travel in every traceparent,
-- so a plain hash of them would let another owner compute a sender's run id,
-- claim it first, or test whether it exists.
CREATE TABLE service_secrets (
  name text PRIMARY KEY,
  value text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT service_secrets_value_long CHECK (length(value) >= 32)
);
