-- Headers sent to a Streamable HTTP server. Each value is a reference to the
-- service's environment (env:NAME), read at call time: no secret is stored.
ALTER TABLE mcp_servers
  ADD COLUMN headers jsonb NOT NULL DEFAULT '[]'::jsonb,
  ADD CONSTRAINT mcp_servers_headers_array CHECK (jsonb_typeof(headers) = 'array'),
  -- A stdio server is started, not called over HTTP: it has no headers.
  ADD CONSTRAINT mcp_servers_stdio_headers CHECK (transport = 'streamable-http' OR headers = '[]'::jsonb);
