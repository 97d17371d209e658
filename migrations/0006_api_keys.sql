-- API keys: each names an actor and what it may do. Only a SHA-256 of the key
-- is stored; the key itself is shown once, when it is created.
CREATE TABLE api_keys (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  actor text NOT NULL,
  key_hash text NOT NULL,
  key_prefix text NOT NULL,
  permissions text[] NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  revoked_at timestamp with time zone,
  CONSTRAINT api_keys_key_hash_unique UNIQUE (key_hash),
  CONSTRAINT api_keys_permissions_known CHECK (permissions <@ ARRAY['read_own_runs', 'read_all_runs', 'record', 'cancel_own_runs', 'cancel_any_run', 'read_payloads', 'manage_keys', 'manage_servers']::text[])
);
