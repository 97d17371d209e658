import { describe, expect, it } from 'vitest';
import type { AttributeValue, ReceivedSpan } from '../../src/otlp/decode.ts';
import { mapSpans } from '../../src/otlp/mapping.ts';

/**
 * Each convention agents send, span by span as its library writes it, through
 * the mapping: which spans become steps, with what outcome, code and tokens.
 * (The real libraries, end to end, are in otel-libraries.test.ts.)
 */

const TRACE = '0af7651916cd43dd8448eb211c80319c';
let next = 1;
const newId = () => (next++).toString(16).padStart(16, '0');
const START = 1_750_000_000_000_000_000n;

interface SpanSpec {
  name?: string;
  parent?: ReceivedSpan | null;
  attributes?: Record<string, AttributeValue>;
  status?: ReceivedSpan['status'];
  statusMessage?: string;
  scope?: string;
  exceptions?: Array<{ type?: string; message?: string }>;
  trace?: string;
}

function span({
  name = 'span',
  parent = null,
  attributes = {},
  status = 'unset',
  statusMessage,
  scope,
  exceptions = [],
  trace = TRACE,
}: SpanSpec): ReceivedSpan {
  return {
    traceId: trace,
    spanId: newId(),
    parentSpanId: parent?.spanId ?? null,
    name,
    startUnixNano: START,
    endUnixNano: START + 5_000_000n,
    attributes: new Map(Object.entries(attributes)),
    resource: new Map([['service.name', 'agent-service']]),
    scope: scope ?? null,
    status,
    statusMessage: statusMessage ?? null,
    events: exceptions.map((e) => ({
      name: 'exception',
      timeUnixNano: START + 1_000_000n,
      attributes: new Map(
        Object.entries({
          ...(e.type ? { 'exception.type': e.type } : {}),
          ...(e.message ? { 'exception.message': e.message } : {}),
        }),
      ),
    })),
    problem: null,
  };
}

/** The steps the spans become, in the order sent: tool steps as name/outcome/code/content, model steps as tokens. */
type StepSummary =
  | { tool: string; server: string | null; outcome: string; code: string | null; content: string }
  | { model: string | null; input: number | null; output: number | null };

function steps(spans: ReceivedSpan[]): StepSummary[] {
  return mapSpans(spans).flatMap((mapped): StepSummary[] => {
    if (mapped.refusal) throw new Error(mapped.refusal.message);
    const step = mapped.step;
    if (!step) return [];
    if (step.type === 'tool') {
      return [
        {
          tool: step.call.toolName,
          server: step.call.server ?? null,
          outcome: step.result.outcome,
          code: step.result.failureCode ?? null,
          content: step.result.content,
        },
      ];
    }
    return [
      {
        model: step.step.model?.model ?? null,
        input: step.step.model?.promptTokens ?? null,
        output: step.step.model?.completionTokens ?? null,
      },
    ];
  });
}

const endingOf = (spans: ReceivedSpan[]) => mapSpans(spans).find((s) => s.ending)?.ending ?? null;

describe('OpenTelemetry GenAI and MCP conventions', () => {
  it('folds the MCP tools/call client span into its execute_tool span: one step per call, server from the MCP span', () => {
    const agent = span({
      name: 'invoke_agent triage',
      attributes: { 'gen_ai.operation.name': 'invoke_agent' },
    });
    const tool = span({
      name: 'execute_tool echo',
      parent: agent,
      attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'echo' },
    });
    const call = span({
      name: 'tools/call echo',
      parent: tool,
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'echo',
        'server.address': 'mcp.example.com',
        'server.port': 443,
      },
    });
    expect(steps([agent, tool, call])).toEqual([
      { tool: 'echo', server: 'mcp.example.com:443', outcome: 'ok', code: null, content: '' },
    ]);
  });

  it("reads the MCP SDK's own abort (-32001 AbortError) as CANCELLED and its timeout (-32001 Request timed out) as FAILED", () => {
    const aborted = span({
      name: 'tools/call slow',
      attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'slow' },
      status: 'error',
      exceptions: [{ type: '-32001', message: 'MCP error -32001: AbortError: This operation was aborted' }],
    });
    const timedOut = span({
      name: 'tools/call slow',
      attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'slow' },
      status: 'error',
      exceptions: [{ type: '-32001', message: 'MCP error -32001: Request timed out' }],
    });
    expect(steps([aborted, timedOut])).toEqual([
      expect.objectContaining({ tool: 'slow', outcome: 'cancelled', code: null }),
      {
        tool: 'slow',
        server: null,
        outcome: 'failed',
        code: 'MCP_ERROR_32001',
        content: 'MCP error -32001: Request timed out',
      },
    ]);
  });

  it('keeps a thrown error as FAILED with its type as the code and its message as the (private) content', () => {
    const tool = span({
      name: 'execute_tool read_file',
      attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'read_file' },
      status: 'error',
      exceptions: [{ type: 'TypeError', message: 'path must be a string' }],
    });
    expect(steps([tool])).toEqual([
      {
        tool: 'read_file',
        server: null,
        outcome: 'failed',
        code: 'TYPE_ERROR',
        content: 'path must be a string',
      },
    ]);
  });

  it('counts a model call once when a framework span wraps the provider span', () => {
    const outer = span({
      name: 'chat gpt',
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.usage.input_tokens': 100,
        'gen_ai.usage.output_tokens': 10,
      },
    });
    const inner = span({
      name: 'chat gpt',
      parent: outer,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.usage.input_tokens': 100,
        'gen_ai.usage.output_tokens': 10,
      },
    });
    expect(steps([outer, inner])).toEqual([{ model: null, input: 100, output: 10 }]);
  });

  it('ends the run CANCELLED when the agent span says the user aborted it', () => {
    const root = span({
      name: 'invoke_agent triage',
      attributes: { 'gen_ai.operation.name': 'invoke_agent' },
      status: 'error',
      exceptions: [{ type: 'AbortError', message: 'This operation was aborted' }],
    });
    expect(endingOf([root])).toEqual({ status: 'cancelled', reason: 'cancelled' });
  });
});

describe('OpenInference', () => {
  it('reads TOOL, LLM and AGENT spans: steps, tokens, an aborted call CANCELLED, the session a conversation', () => {
    const agent = span({
      name: 'agent',
      attributes: { 'openinference.span.kind': 'AGENT', 'agent.name': 'researcher', 'session.id': 's-1' },
    });
    const llm = span({
      name: 'ChatOpenAI',
      parent: agent,
      attributes: {
        'openinference.span.kind': 'LLM',
        'llm.model_name': 'gpt-4o-mini',
        'llm.token_count.prompt': 120,
        'llm.token_count.completion': 12,
        'llm.token_count.total': 132,
      },
    });
    const ok = span({
      name: 'echo',
      parent: agent,
      attributes: {
        'openinference.span.kind': 'TOOL',
        'tool.name': 'echo',
        'input.value': '{"message":"hi"}',
        'output.value': 'Echo: hi',
      },
    });
    const aborted = span({
      name: 'slow',
      parent: agent,
      attributes: { 'openinference.span.kind': 'TOOL', 'tool.name': 'slow' },
      status: 'error',
      exceptions: [{ type: 'AbortError', message: 'This operation was aborted' }],
    });
    const mapped = mapSpans([agent, llm, ok, aborted]);
    expect(mapped.map((s) => s.conversationId)).toEqual(['s-1', null, null, null]);
    expect(mapped[0]?.configuration.agentName).toBe('researcher');
    expect(steps([agent, llm, ok, aborted])).toEqual([
      { model: 'gpt-4o-mini', input: 120, output: 12 },
      { tool: 'echo', server: null, outcome: 'ok', code: null, content: 'Echo: hi' },
      expect.objectContaining({ tool: 'slow', outcome: 'cancelled' }),
    ]);
  });
});

describe('Vercel AI SDK (ai.* spans)', () => {
  it('reads ai.toolCall and doGenerate spans; an AbortError is CANCELLED, an MCP isError result FAILED', () => {
    const root = span({
      name: 'ai.generateText',
      attributes: {
        'ai.operationId': 'ai.generateText',
        'ai.telemetry.functionId': 'support-bot',
        'ai.telemetry.metadata.sessionId': 'chat-7',
        'ai.usage.promptTokens': 300,
      },
    });
    const model = span({
      name: 'ai.generateText.doGenerate',
      parent: root,
      attributes: {
        'ai.operationId': 'ai.generateText.doGenerate',
        'gen_ai.response.model': 'gpt-4o-mini-2024',
        'gen_ai.usage.input_tokens': 150,
        'gen_ai.usage.output_tokens': 20,
      },
    });
    const isError = span({
      name: 'ai.toolCall',
      parent: root,
      attributes: {
        'ai.operationId': 'ai.toolCall',
        'ai.toolCall.name': 'create_ticket',
        'ai.toolCall.id': 'call_1',
        'ai.toolCall.result': '{"content":[{"type":"text","text":"queue closed"}],"isError":true}',
      },
    });
    const aborted = span({
      name: 'ai.toolCall',
      parent: root,
      attributes: { 'ai.operationId': 'ai.toolCall', 'ai.toolCall.name': 'long_report' },
      status: 'error',
      exceptions: [{ type: 'AbortError', message: 'This operation was aborted' }],
    });
    const mapped = mapSpans([root, model, isError, aborted]);
    expect(mapped[0]?.configuration.agentName).toBe('support-bot');
    expect(mapped[0]?.conversationId).toBe('chat-7');
    expect(steps([root, model, isError, aborted])).toEqual([
      { model: 'gpt-4o-mini-2024', input: 150, output: 20 },
      expect.objectContaining({ tool: 'create_ticket', outcome: 'failed', code: 'TOOL_ERROR' }),
      expect.objectContaining({ tool: 'long_report', outcome: 'cancelled', code: null }),
    ]);
  });
});

describe('OpenLLMetry / Traceloop', () => {
  it('reads tool and workflow spans; exception type "20" (DOMException ABORT_ERR) is CANCELLED, is_error FAILED', () => {
    const workflow = span({
      name: 'triage.workflow',
      attributes: {
        'traceloop.span.kind': 'workflow',
        'traceloop.workflow.name': 'triage',
        'traceloop.association.properties.session_id': 'conv-9',
      },
    });
    const aborted = span({
      name: 'slow.tool',
      parent: workflow,
      attributes: { 'traceloop.span.kind': 'tool', 'traceloop.entity.name': 'slow' },
      status: 'error',
      exceptions: [{ type: '20', message: 'This operation was aborted' }],
    });
    const failed = span({
      name: 'create_ticket.tool',
      parent: workflow,
      attributes: {
        'traceloop.span.kind': 'tool',
        'traceloop.entity.name': 'create_ticket',
        'traceloop.entity.output': '{"content":[],"is_error":true}',
      },
    });
    const model = span({
      name: 'openai.chat',
      parent: workflow,
      attributes: {
        'llm.request.type': 'chat',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.prompt_tokens': 80,
        'gen_ai.usage.completion_tokens': 8,
      },
    });
    const mapped = mapSpans([workflow, aborted, failed, model]);
    expect(mapped[0]?.configuration.agentName).toBe('triage');
    expect(mapped[0]?.conversationId).toBe('conv-9');
    expect(steps([workflow, aborted, failed, model])).toEqual([
      expect.objectContaining({ tool: 'slow', outcome: 'cancelled' }),
      expect.objectContaining({ tool: 'create_ticket', outcome: 'failed', code: 'TOOL_ERROR' }),
      { model: 'gpt-4o-mini', input: 80, output: 8 },
    ]);
  });

  it("folds its MCP instrumentation's tool span (its own scope, under mcp.client.session) into the SDK's tool span of the same call", () => {
    const workflow = span({
      name: 'support-agent.workflow',
      attributes: { 'traceloop.span.kind': 'workflow', 'traceloop.workflow.name': 'support-agent' },
    });
    const session = span({ name: 'mcp.client.session', parent: workflow });
    const viaSdk: ReceivedSpan = {
      ...span({
        name: 'gzip.tool',
        parent: workflow,
        attributes: {
          'traceloop.span.kind': 'tool',
          'traceloop.entity.name': 'gzip',
          'traceloop.entity.output': '"Error processing file"',
        },
      }),
      startUnixNano: START,
      endUnixNano: START + 9_000_000n,
    };
    const viaMcp: ReceivedSpan = {
      ...span({
        name: 'gzip.tool',
        parent: session,
        scope: '@traceloop/instrumentation-mcp',
        status: 'error',
        attributes: {
          'traceloop.span.kind': 'tool',
          'traceloop.entity.name': 'gzip',
          'traceloop.entity.output': '{"result":"Error processing file"}',
        },
      }),
      startUnixNano: START + 1_000_000n,
      endUnixNano: START + 8_000_000n,
    };
    expect(steps([workflow, session, viaMcp, viaSdk])).toEqual([
      { tool: 'gzip', server: null, outcome: 'failed', code: null, content: '"Error processing file"' },
    ]);
    // The session's initialize answer names the server (a stdio connection has no address).
    const initialize = span({
      name: 'initialize.mcp',
      parent: session,
      scope: '@traceloop/instrumentation-mcp',
      attributes: {
        'traceloop.entity.output': JSON.stringify({ serverInfo: { name: 'mcp-servers/everything' } }),
      },
    });
    expect(steps([workflow, session, initialize, viaMcp, viaSdk])).toEqual([
      expect.objectContaining({ tool: 'gzip', server: 'mcp-servers/everything', outcome: 'failed' }),
    ]);
  });
});

describe("OpenLLMetry's LangChain instrumentation (LangGraph)", () => {
  const toolMessage = (name: string, status: 'success' | 'error') =>
    JSON.stringify({
      lc: 1,
      type: 'constructor',
      id: ['langchain_core', 'messages', 'ToolMessage'],
      kwargs: { status, content: 'Echo: hi', tool_call_id: 'call_7', name },
    });

  it("names a tool step after the ToolMessage it answered (not the tool's class), and reads status error as FAILED", () => {
    const workflow = span({
      name: 'support-agent.workflow',
      attributes: { 'traceloop.span.kind': 'workflow', 'traceloop.workflow.name': 'support-agent' },
    });
    const tool = (status: 'success' | 'error') =>
      span({
        name: 'execute_tool DynamicStructuredTool',
        parent: workflow,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.provider.name': 'langchain',
          'traceloop.span.kind': 'task',
          'traceloop.entity.name': 'DynamicStructuredTool',
          'traceloop.entity.output': toolMessage('echo', status),
        },
      });
    expect(steps([workflow, tool('success'), tool('error')])).toEqual([
      expect.objectContaining({ tool: 'echo', outcome: 'ok' }),
      expect.objectContaining({ tool: 'echo', outcome: 'failed' }),
    ]);
  });

  it("takes no configuration from a chain's class: a graph node is not the agent", () => {
    const chain = span({
      name: 'workflow RunnableSequence',
      attributes: {
        'gen_ai.operation.name': 'workflow',
        'gen_ai.provider.name': 'langchain',
        'traceloop.span.kind': 'workflow',
        'traceloop.workflow.name': 'RunnableSequence',
      },
    });
    const [mapped] = mapSpans([chain]);
    expect(mapped?.configuration.agentName).toBeNull();
    expect(mapped?.step).toBeNull();
  });
});

describe('OpenAI Agents SDK (its span data bridged to OpenTelemetry)', () => {
  it('reads function, generation and agent spans; an abort in error.data is CANCELLED', () => {
    const agent = span({ name: 'agent support', attributes: { type: 'agent', name: 'support' } });
    const generation = span({
      name: 'generation',
      parent: agent,
      attributes: {
        type: 'generation',
        model: 'gpt-4o-mini',
        output: '[{"id":"c1","usage":{"prompt_tokens":120,"completion_tokens":18}}]',
      },
    });
    const aborted = span({
      name: 'function slow',
      parent: agent,
      status: 'error',
      attributes: {
        type: 'function',
        name: 'slow',
        'mcp_data.server': 'everything',
        'error.message': 'Error running tool',
        'error.data': '{"tool_name":"slow","error":"AbortError: This operation was aborted"}',
      },
    });
    expect(mapSpans([agent])[0]?.configuration.agentName).toBe('support');
    expect(steps([agent, generation, aborted])).toEqual([
      { model: 'gpt-4o-mini', input: 120, output: 18 },
      {
        tool: 'slow',
        server: 'everything',
        outcome: 'cancelled',
        code: null,
        content: 'Error running tool\n{"tool_name":"slow","error":"AbortError: This operation was aborted"}',
      },
    ]);
  });
});
