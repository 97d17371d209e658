-- Spans received over OTLP (POST /v1/traces), one row per span accepted,
-- whether or not it became a step. Exporters retry: a span sent again is known
-- by its trace and span id and stored once. The ids are scoped to the key's
-- actor, so one sender can neither pre-empt nor probe another's trace.
-- `sequence` is the step the span became (null for a span that maps to none,
-- such as an agent span that ended the run).
CREATE TABLE otlp_spans (
  owner text NOT NULL,
  trace_id text NOT NULL,
  span_id text NOT NULL,
  run_id bigint NOT NULL,
  sequence integer,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT otlp_spans_run_id_runs_id_fk FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE,
  CONSTRAINT otlp_spans_ids_hex CHECK (trace_id ~ '^[0-9a-f]{32}$' AND span_id ~ '^[0-9a-f]{16}$')
);
-- Exactly once: the one index a re-sent span collides with. Its prefix
-- (owner, trace_id) also finds the run a trace already went to.
CREATE UNIQUE INDEX otlp_spans_owner_trace_span_unique ON otlp_spans (owner, trace_id, span_id);
-- Deleting a run deletes its spans without a scan.
CREATE INDEX otlp_spans_run_id_idx ON otlp_spans (run_id);
