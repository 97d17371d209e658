-- One step per tool call across export requests: an exporter that sends each
-- span on its own (a simple span processor) delivers an MCP request's span
-- before the tool span above it. Each stored span keeps its parent and, when
-- it became a tool step, whether it was the call's tool span or its MCP
-- request, so that the other span of the same call, arriving later, is
-- recognised and not recorded a second time.
ALTER TABLE otlp_spans ADD COLUMN parent_span_id text;
ALTER TABLE otlp_spans ADD COLUMN call_role text;
ALTER TABLE otlp_spans ADD CONSTRAINT otlp_spans_call_role_known CHECK (call_role IN ('tool', 'mcp_call'));
CREATE INDEX otlp_spans_parent_idx ON otlp_spans (owner, trace_id, parent_span_id) WHERE parent_span_id IS NOT NULL;
