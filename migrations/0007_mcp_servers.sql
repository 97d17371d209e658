-- MCP servers runledger can call tools on, inside a run.
CREATE TABLE mcp_servers (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  identifier text NOT NULL,
  transport text NOT NULL,
  url text,
  command text,
  args text[] NOT NULL DEFAULT '{}'::text[],
  last_contact_at timestamp with time zone,
  last_latency_ms integer,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT mcp_servers_identifier_unique UNIQUE (identifier),
  CONSTRAINT mcp_servers_transport_known CHECK (transport IN ('streamable-http', 'stdio')),
  -- A Streamable HTTP server has a URL and no command; a stdio server the reverse.
  CONSTRAINT mcp_servers_endpoint CHECK ((transport = 'streamable-http') = (url IS NOT NULL) AND (transport = 'stdio') = (command IS NOT NULL))
);
