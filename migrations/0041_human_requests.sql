-- A human in the loop (SPEC 13): a run waits for an approval of a proposed
-- tool call or for input. A request and its decision are steps of the
-- timeline; this table holds what is asked and how it stands, so that a
-- decision is checked and stored once (four eyes, expiry, a schema) and an
-- inbox of open requests is one index range.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_permissions_known;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_permissions_known CHECK (permissions <@ ARRAY['read_own_runs', 'read_all_runs', 'record', 'cancel_own_runs', 'cancel_any_run', 'read_payloads', 'manage_keys', 'manage_servers', 'approve_runs']::text[]);

CREATE TABLE human_requests (
  id bigint GENERATED ALWAYS AS IDENTITY,
  uuid uuid NOT NULL,
  run_id bigint NOT NULL,
  kind text NOT NULL,
  source text NOT NULL,
  requested_by text NOT NULL,
  requested_at timestamp with time zone NOT NULL,
  expires_at timestamp with time zone,
  tool_name text,
  server text,
  arguments jsonb,
  reason text,
  prompt text,
  schema jsonb,
  idempotency_key text,
  fingerprint text NOT NULL DEFAULT '',
  state text NOT NULL DEFAULT 'open',
  decided_by text,
  decided_at timestamp with time zone,
  comment text,
  answer jsonb,
  CONSTRAINT human_requests_pkey PRIMARY KEY (id),
  CONSTRAINT human_requests_uuid_unique UNIQUE (uuid),
  CONSTRAINT human_requests_run_key_unique UNIQUE (run_id, idempotency_key),
  CONSTRAINT human_requests_run_id_runs_id_fk FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE,
  CONSTRAINT human_requests_kind_known CHECK (kind in ('approval', 'input')),
  CONSTRAINT human_requests_source_known CHECK (source in ('api', 'mcp')),
  CONSTRAINT human_requests_state_known CHECK (state in ('open', 'approved', 'denied', 'answered', 'declined', 'expired', 'cancelled')),
  CONSTRAINT human_requests_state_of_kind CHECK (
    (state not in ('approved', 'denied') or kind = 'approval') and (state not in ('answered', 'declined') or kind = 'input')
  ),
  CONSTRAINT human_requests_decided_when_closed CHECK ((state = 'open') = (decided_at is null)),
  CONSTRAINT human_requests_answer_only_answered CHECK (answer is null or state = 'answered'),
  CONSTRAINT human_requests_fields_of_kind CHECK (
    (kind = 'approval' and tool_name is not null and prompt is null and schema is null)
    or (kind = 'input' and prompt is not null and schema is not null)
  )
);
CREATE INDEX human_requests_open_idx ON human_requests (requested_at, id) WHERE state = 'open';
CREATE INDEX human_requests_run_idx ON human_requests (run_id, requested_at);
