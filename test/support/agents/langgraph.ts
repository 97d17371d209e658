import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import type { FakeModel, Scenario } from './fake-model.ts';
import { MODEL } from './fake-model.ts';
import { EVERYTHING_STDIO, LOOKUP_ORDER, lookupOrder, promptFor } from './harness.ts';

type ReactAgent = ReturnType<typeof createReactAgent>;

/**
 * One invocation of the LangGraph ReAct agent both LangGraph cases trace
 * (OpenInference, OpenLLMetry): `ChatOpenAI` on the fake model, the tools of
 * server-everything through `@langchain/mcp-adapters` and one tool of its
 * own. `invoke` runs the graph, inside whatever the tracing library wraps an
 * invocation in; its last message is the answer.
 */
export async function invokeReactAgent(
  scenario: Scenario,
  model: FakeModel,
  invoke: (
    agent: ReactAgent,
    input: { messages: Array<{ role: 'user'; content: string }> },
  ) => Promise<{
    messages: Array<{ content: unknown }>;
  }>,
): Promise<string> {
  const mcp = new MultiServerMCPClient({
    mcpServers: { everything: { transport: 'stdio', ...EVERYTHING_STDIO } },
  });
  try {
    const lookup = tool(async ({ orderId }) => lookupOrder(orderId), {
      name: LOOKUP_ORDER.name,
      description: LOOKUP_ORDER.description,
      schema: z.object({ orderId: z.string() }),
    });
    const agent = createReactAgent({
      llm: new ChatOpenAI({
        model: MODEL,
        apiKey: 'sk-fake',
        configuration: { baseURL: model.baseURL },
        // Not streaming: LangChain then counts tokens itself with tiktoken, which downloads its encodings.
      }),
      tools: [...(await mcp.getTools()), lookup],
      name: 'support-agent',
    });
    const state = await invoke(agent, { messages: [{ role: 'user', content: promptFor(scenario) }] });
    const last = state.messages.at(-1);
    return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content);
  } finally {
    await mcp.close();
  }
}
