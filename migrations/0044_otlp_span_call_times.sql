-- One step per tool call when a call's two spans are not parent and child:
-- OpenLLMetry's MCP instrumentation records each MCP request under its client
-- session span, beside the tool span of the same call. Sent span by span,
-- the two are tied by the tool's name and by time (the request lies within
-- the call), so a stored call span keeps its tool's name and its times.
ALTER TABLE otlp_spans ADD COLUMN tool_name text;
ALTER TABLE otlp_spans ADD COLUMN started_unix_nano bigint;
ALTER TABLE otlp_spans ADD COLUMN ended_unix_nano bigint;
ALTER TABLE otlp_spans ADD CONSTRAINT otlp_spans_call_times CHECK (
  tool_name IS NULL OR (call_role IS NOT NULL AND started_unix_nano IS NOT NULL AND ended_unix_nano >= started_unix_nano)
);
CREATE INDEX otlp_spans_call_tool_idx ON otlp_spans (owner, trace_id, tool_name, call_role, started_unix_nano)
  WHERE tool_name IS NOT NULL;
