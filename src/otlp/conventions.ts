import { STATED_OUTCOME_ATTRIBUTE } from '../domain/span-evidence.ts';
import type { Attributes, AttributeValue, ReceivedSpan } from './decode.ts';

/**
 * What one span says, whatever convention its library follows: the
 * OpenTelemetry GenAI and MCP semantic conventions, OpenInference, the Vercel
 * AI SDK's `ai.*` spans, OpenLLMetry/Traceloop. Each convention is read by a
 * function of its own below; the mapping (mapping.ts) only sees readings.
 */

/** The role of a span in an agent's run. */
export type Role =
  /** One call of one tool: a tool step. */
  | 'tool'
  /** One call of a model: a model step. */
  | 'model'
  /** An agent's invocation (or a workflow around it): its evidence can end the run. */
  | 'agent'
  /** An MCP `tools/call` request: folded into the tool span above it, a tool step of its own without one. */
  | 'mcp_call'
  /** An MCP `notifications/cancelled`: evidence that a call was cancelled. */
  | 'cancel_notice'
  /** Anything else (HTTP, a chain, a task): no step, its children are read all the same. */
  | 'none';

export interface Reading {
  role: Role;
  /** Which convention said so, for the docs' table and for tests. */
  convention: 'genai' | 'mcp' | 'openinference' | 'ai-sdk' | 'traceloop' | 'openai-agents' | null;
  toolName: string | null;
  toolCallId: string | null;
  arguments: AttributeValue | undefined;
  result: AttributeValue | undefined;
  server: string | null;
  model: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  finishReason: string | null;
  /** The agent's or the workflow's name: a run's configuration. */
  agentName: string | null;
  /** A conversation or session the span belongs to: spans of one share a run. */
  conversationId: string | null;
}

/** Attribute names, each stated once. */
export const Attr = {
  // OpenTelemetry GenAI and general conventions (1.45).
  operation: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  conversationId: 'gen_ai.conversation.id',
  agentName: 'gen_ai.agent.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  /** The names before GenAI 1.27, still sent by OpenLLMetry. */
  promptTokens: 'gen_ai.usage.prompt_tokens',
  completionTokens: 'gen_ai.usage.completion_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  errorType: 'error.type',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  serviceName: 'service.name',
  // MCP conventions.
  mcpMethod: 'mcp.method.name',
  mcpSession: 'mcp.session.id',
  mcpServerName: 'mcp.server.name',
  jsonRpcRequestId: 'jsonrpc.request.id',
  // OpenInference.
  oiKind: 'openinference.span.kind',
  oiToolName: 'tool.name',
  oiToolCallId: 'tool_call.id',
  oiInput: 'input.value',
  oiOutput: 'output.value',
  oiModel: 'llm.model_name',
  oiPromptTokens: 'llm.token_count.prompt',
  oiCompletionTokens: 'llm.token_count.completion',
  oiSession: 'session.id',
  oiAgentName: 'agent.name',
  // Vercel AI SDK (6: `ai.*` spans).
  aiOperation: 'ai.operationId',
  aiToolName: 'ai.toolCall.name',
  aiToolCallId: 'ai.toolCall.id',
  aiToolArgs: 'ai.toolCall.args',
  aiToolInput: 'ai.toolCall.input',
  aiToolResult: 'ai.toolCall.result',
  aiToolOutput: 'ai.toolCall.output',
  aiFunctionId: 'ai.telemetry.functionId',
  aiSessionId: 'ai.telemetry.metadata.sessionId',
  aiConversationId: 'ai.telemetry.metadata.conversationId',
  aiModelId: 'ai.model.id',
  aiResponseModel: 'ai.response.model',
  aiPromptTokens: 'ai.usage.promptTokens',
  aiCompletionTokens: 'ai.usage.completionTokens',
  aiInputTokens: 'ai.usage.inputTokens',
  aiOutputTokens: 'ai.usage.outputTokens',
  aiFinishReason: 'ai.response.finishReason',
  // OpenLLMetry / Traceloop.
  tlKind: 'traceloop.span.kind',
  tlEntityName: 'traceloop.entity.name',
  tlEntityInput: 'traceloop.entity.input',
  tlEntityOutput: 'traceloop.entity.output',
  tlWorkflowName: 'traceloop.workflow.name',
  tlAssociation: 'traceloop.association.properties.',
  tlRequestType: 'llm.request.type',
  // OpenAI Agents SDK, its span data as a bridge to OpenTelemetry flattens it (type, name, input, output, error).
  oaType: 'type',
  oaName: 'name',
  oaInput: 'input',
  oaOutput: 'output',
  oaModel: 'model',
  mcpDataServer: 'mcp_data.server',
  // runledger's own, for what the conventions cannot say.
  statedOutcome: STATED_OUTCOME_ATTRIBUTE,
  configuration: 'runledger.configuration',
  server: 'runledger.server',
  round: 'runledger.round',
} as const;

/** GenAI operations that are a model call. */
const MODEL_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content']);
/** GenAI operations of an agent. */
const AGENT_OPERATIONS = new Set(['invoke_agent', 'create_agent']);
/** The Vercel AI SDK's spans of one model call (inside generateText, streamText, …). */
const AI_MODEL_CALLS = /^ai\.(generateText|streamText|generateObject|streamObject)\.do(Generate|Stream)$/;
/** Its spans of a whole call of generateText, streamText, …: the agent's invocation. */
const AI_INVOCATIONS = /^ai\.(generateText|streamText|generateObject|streamObject)$/;
/** Association properties that name a conversation, in the spellings people use. */
const ASSOCIATION_CONVERSATION = [
  'session_id',
  'sessionId',
  'conversation_id',
  'conversationId',
  'thread_id',
  'threadId',
];

export const CANCELLED_NOTIFICATION = 'notifications/cancelled';

export function text(attributes: Attributes, name: string): string | null {
  const value = attributes.get(name);
  if (typeof value === 'string') return value.length > 0 ? value : null;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return null;
}

export function integer(attributes: Attributes, name: string): number | null {
  const value = attributes.get(name);
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** The first of these attributes the span carries. */
function firstText(attributes: Attributes, names: readonly string[]): string | null {
  for (const name of names) {
    const value = text(attributes, name);
    if (value !== null) return value;
  }
  return null;
}

function firstInteger(attributes: Attributes, names: readonly string[]): number | null {
  for (const name of names) {
    const value = integer(attributes, name);
    if (value !== null) return value;
  }
  return null;
}

function firstValue(attributes: Attributes, names: readonly string[]): AttributeValue | undefined {
  for (const name of names) {
    const value = attributes.get(name);
    if (value !== undefined && value !== null && value !== '') return value;
  }
  return undefined;
}

const empty = (role: Role, convention: Reading['convention']): Reading => ({
  role,
  convention,
  toolName: null,
  toolCallId: null,
  arguments: undefined,
  result: undefined,
  server: null,
  model: null,
  inputTokens: null,
  outputTokens: null,
  finishReason: null,
  agentName: null,
  conversationId: null,
});

/** The part of a span's name after a prefix (`execute_tool search` → `search`), or null. */
function nameAfter(span: ReceivedSpan, prefix: string): string | null {
  return span.name.startsWith(prefix) && span.name.length > prefix.length
    ? span.name.slice(prefix.length)
    : null;
}

function finishReasonOf(attributes: Attributes): string | null {
  const reasons = attributes.get(Attr.finishReasons);
  const first = Array.isArray(reasons) ? reasons.find((r) => typeof r === 'string') : reasons;
  if (typeof first === 'string' && first.length > 0) return first;
  return text(attributes, Attr.aiFinishReason);
}

/** A conversation named by any convention on this span. */
function conversationOf(attributes: Attributes): string | null {
  return (
    firstText(attributes, [Attr.conversationId, Attr.oiSession, Attr.aiSessionId, Attr.aiConversationId]) ??
    firstText(
      attributes,
      ASSOCIATION_CONVERSATION.map((key) => `${Attr.tlAssociation}${key}`),
    )
  );
}

/** Model facts, by whichever convention carries them. */
function modelFacts(reading: Reading, attributes: Attributes): Reading {
  return {
    ...reading,
    model: firstText(attributes, [
      Attr.responseModel,
      Attr.aiResponseModel,
      Attr.requestModel,
      Attr.oiModel,
      Attr.aiModelId,
    ]),
    inputTokens: firstInteger(attributes, [
      Attr.inputTokens,
      Attr.promptTokens,
      Attr.oiPromptTokens,
      Attr.aiInputTokens,
      Attr.aiPromptTokens,
    ]),
    outputTokens: firstInteger(attributes, [
      Attr.outputTokens,
      Attr.completionTokens,
      Attr.oiCompletionTokens,
      Attr.aiOutputTokens,
      Attr.aiCompletionTokens,
    ]),
    finishReason: finishReasonOf(attributes),
  };
}

/** The MCP server a span names: ours, the MCP conventions', a bridge's, or the address it called. */
function serverOf(attributes: Attributes): string | null {
  const named = firstText(attributes, [Attr.server, Attr.mcpServerName, Attr.mcpDataServer]);
  if (named) return named;
  const address = text(attributes, Attr.serverAddress);
  if (!address) return null;
  const port = integer(attributes, Attr.serverPort);
  return port === null ? address : `${address}:${port}`;
}

/** What a LangChain `ToolMessage` says, as serialised (`{"lc":1,"id":[…,"ToolMessage"],"kwargs":{…}}`). */
export interface LangChainToolMessage {
  name: string | null;
  toolCallId: string | null;
  /** LangChain's own mark of a failed call (`status: "error"`). */
  failed: boolean;
}

/** A serialised LangChain `ToolMessage`, or null when the value is not one. */
export function langChainToolMessage(value: AttributeValue | undefined): LangChainToolMessage | null {
  if (typeof value !== 'string' || !value.includes('ToolMessage')) return null;
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return null;
  }
  if (typeof json !== 'object' || json === null) return null;
  const { id, kwargs } = json as { id?: unknown; kwargs?: unknown };
  if (!Array.isArray(id) || id.at(-1) !== 'ToolMessage' || typeof kwargs !== 'object' || kwargs === null)
    return null;
  const { name, tool_call_id: toolCallId, status } = kwargs as Record<string, unknown>;
  return {
    name: typeof name === 'string' && name !== '' ? name : null,
    toolCallId: typeof toolCallId === 'string' && toolCallId !== '' ? toolCallId : null,
    failed: status === 'error',
  };
}

/**
 * A LangChain chain or graph node as OpenLLMetry records it (`workflow
 * RunnableSequence`): its `traceloop.workflow.name` is the chain's class, not
 * an agent's name, and it is no agent span.
 */
const isLangChainChain = (a: Attributes) =>
  text(a, Attr.operation) === 'workflow' && text(a, Attr.providerName) === 'langchain';

/** OpenTelemetry GenAI and MCP semantic conventions. */
function readGenAi(span: ReceivedSpan): Reading | null {
  const a = span.attributes;
  const method = text(a, Attr.mcpMethod);
  if (method === CANCELLED_NOTIFICATION) return empty('cancel_notice', 'mcp');
  const operation = text(a, Attr.operation);
  if (method === 'tools/call') {
    // The MCP client span (which the conventions also mark execute_tool): folded into the tool span above it.
    return {
      ...empty('mcp_call', 'mcp'),
      toolName: text(a, Attr.toolName) ?? nameAfter(span, 'tools/call '),
      toolCallId: text(a, Attr.toolCallId),
      arguments: a.get(Attr.toolArguments),
      result: a.get(Attr.toolResult),
      server: serverOf(a),
    };
  }
  if (operation === 'execute_tool') {
    // OpenLLMetry's LangChain instrumentation names the span after the tool's class: the tool's own name
    // and call id are in the ToolMessage it answered.
    const answer = langChainToolMessage(a.get(Attr.tlEntityOutput));
    return {
      ...empty('tool', 'genai'),
      toolName: text(a, Attr.toolName) ?? answer?.name ?? nameAfter(span, 'execute_tool '),
      toolCallId: text(a, Attr.toolCallId) ?? answer?.toolCallId ?? null,
      arguments: a.get(Attr.toolArguments) ?? a.get(Attr.tlEntityInput),
      result: a.get(Attr.toolResult) ?? a.get(Attr.tlEntityOutput),
      server: serverOf(a),
    };
  }
  if (operation !== null && MODEL_OPERATIONS.has(operation)) return modelFacts(empty('model', 'genai'), a);
  if (isLangChainChain(a)) return empty('none', 'traceloop');
  if (operation !== null && AGENT_OPERATIONS.has(operation)) {
    return {
      ...empty('agent', 'genai'),
      agentName: text(a, Attr.agentName) ?? nameAfter(span, `${operation} `),
    };
  }
  return null;
}

/** OpenInference (Arize Phoenix's conventions). */
function readOpenInference(span: ReceivedSpan): Reading | null {
  const a = span.attributes;
  const kind = text(a, Attr.oiKind)?.toUpperCase();
  if (!kind) return null;
  if (kind === 'TOOL') {
    return {
      ...empty('tool', 'openinference'),
      toolName: text(a, Attr.oiToolName) ?? span.name,
      toolCallId: text(a, Attr.oiToolCallId),
      arguments: a.get(Attr.oiInput),
      result: a.get(Attr.oiOutput),
      server: serverOf(a),
    };
  }
  if (kind === 'LLM') return modelFacts(empty('model', 'openinference'), a);
  if (kind === 'AGENT')
    return { ...empty('agent', 'openinference'), agentName: text(a, Attr.oiAgentName) ?? span.name };
  return empty('none', 'openinference');
}

/** The Vercel AI SDK's own spans (`experimental_telemetry`). */
function readAiSdk(span: ReceivedSpan): Reading | null {
  const a = span.attributes;
  const operation = text(a, Attr.aiOperation);
  if (!operation?.startsWith('ai.')) return null;
  if (operation === 'ai.toolCall') {
    return {
      ...empty('tool', 'ai-sdk'),
      toolName: text(a, Attr.aiToolName) ?? span.name,
      toolCallId: text(a, Attr.aiToolCallId),
      arguments: firstValue(a, [Attr.aiToolArgs, Attr.aiToolInput]),
      result: firstValue(a, [Attr.aiToolResult, Attr.aiToolOutput]),
      server: serverOf(a),
    };
  }
  if (AI_MODEL_CALLS.test(operation)) return modelFacts(empty('model', 'ai-sdk'), a);
  if (AI_INVOCATIONS.test(operation)) {
    // Its usage is the sum of its model calls' (each a step of its own): not counted again.
    return { ...empty('agent', 'ai-sdk'), agentName: text(a, Attr.aiFunctionId) };
  }
  return empty('none', 'ai-sdk');
}

/** The instrumentation scope of OpenLLMetry's MCP client instrumentation. */
export const TRACELOOP_MCP_SCOPE = '@traceloop/instrumentation-mcp';

/** OpenLLMetry / Traceloop. */
function readTraceloop(span: ReceivedSpan): Reading | null {
  const a = span.attributes;
  const kind = text(a, Attr.tlKind)?.toLowerCase();
  if (kind === 'tool') {
    return {
      // Its MCP instrumentation records each MCP request as a tool span too: the request of a call, whoever records the call.
      ...empty(span.scope === TRACELOOP_MCP_SCOPE ? 'mcp_call' : 'tool', 'traceloop'),
      toolName: text(a, Attr.tlEntityName) ?? span.name.replace(/\.tool$/, ''),
      arguments: a.get(Attr.tlEntityInput),
      result: a.get(Attr.tlEntityOutput),
      server: serverOf(a),
    };
  }
  if (kind === 'agent' || kind === 'workflow') {
    return {
      ...empty('agent', 'traceloop'),
      agentName: text(a, Attr.tlWorkflowName) ?? text(a, Attr.tlEntityName),
    };
  }
  if (kind) return empty('none', 'traceloop');
  // Its model instrumentations mark a model call by the request type.
  const request = text(a, Attr.tlRequestType);
  if (request === 'chat' || request === 'completion') return modelFacts(empty('model', 'traceloop'), a);
  return null;
}

/** The usage an OpenAI chat completion reports in its body (`usage.prompt_tokens`), as the Agents SDK keeps it in `output`. */
function completionUsage(value: AttributeValue | undefined): { input: number | null; output: number | null } {
  let json: unknown = value;
  if (typeof value === 'string') {
    try {
      json = JSON.parse(value);
    } catch {
      return { input: null, output: null };
    }
  }
  const first = Array.isArray(json) ? json[0] : json;
  const usage =
    typeof first === 'object' && first !== null ? (first as { usage?: unknown }).usage : undefined;
  const count = (n: unknown) => (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : null);
  if (typeof usage !== 'object' || usage === null) return { input: null, output: null };
  const u = usage as Record<string, unknown>;
  return {
    input: count(u.prompt_tokens ?? u.input_tokens),
    output: count(u.completion_tokens ?? u.output_tokens),
  };
}

/** The OpenAI Agents SDK's spans (its span data: `type` function, generation, agent), as bridged to OpenTelemetry. */
function readOpenAiAgents(span: ReceivedSpan): Reading | null {
  const a = span.attributes;
  const type = text(a, Attr.oaType);
  if (type === 'function' && text(a, Attr.oaName)) {
    return {
      ...empty('tool', 'openai-agents'),
      toolName: text(a, Attr.oaName),
      arguments: a.get(Attr.oaInput),
      result: a.get(Attr.oaOutput),
      server: serverOf(a),
    };
  }
  if (type === 'generation' && text(a, Attr.oaModel)) {
    const usage = completionUsage(a.get(Attr.oaOutput));
    const reading = modelFacts(empty('model', 'openai-agents'), a);
    return {
      ...reading,
      model: reading.model ?? text(a, Attr.oaModel),
      inputTokens: reading.inputTokens ?? usage.input,
      outputTokens: reading.outputTokens ?? usage.output,
    };
  }
  if (type === 'agent' && text(a, Attr.oaName))
    return { ...empty('agent', 'openai-agents'), agentName: text(a, Attr.oaName) };
  return null;
}

/** A span read by the first convention that recognises it. */
export function readSpan(span: ReceivedSpan): Reading {
  const reading =
    readGenAi(span) ??
    readOpenInference(span) ??
    readAiSdk(span) ??
    readTraceloop(span) ??
    readOpenAiAgents(span);
  const base = reading ?? empty('none', null);
  return {
    ...base,
    conversationId: base.conversationId ?? conversationOf(span.attributes),
    agentName:
      base.agentName ??
      (isLangChainChain(span.attributes)
        ? null
        : firstText(span.attributes, [
            Attr.agentName,
            Attr.oiAgentName,
            Attr.aiFunctionId,
            Attr.tlWorkflowName,
          ])),
  };
}
