import * as McpClientModule from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import * as traceloop from '@traceloop/node-server-sdk';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { MODEL } from './fake-model.ts';
import { type AgentLibrary, EVERYTHING_STDIO, LOOKUP_ORDER, lookupOrder, promptFor } from './harness.ts';

/**
 * An agent traced by OpenLLMetry (`@traceloop/node-server-sdk`): the OpenAI
 * and MCP client instrumentations it brings (handed the modules, as its docs
 * say under ES modules), the run in `withWorkflow`, each tool in `withTool`.
 * The MCP client connects once per run, inside the workflow.
 */
/** The module types it declares are the CommonJS builds': the ES module builds are the same classes. */
type Modules = NonNullable<NonNullable<Parameters<typeof traceloop.initialize>[0]>['instrumentModules']>;

export const traceloopAgent: AgentLibrary = {
  async setup(exporter: SpanExporter) {
    traceloop.initialize({
      appName: 'support-agent',
      exporter,
      disableBatch: true,
      silenceInitializationMessage: true,
      traceloopSyncEnabled: false,
      instrumentModules: {
        openAI: OpenAI as unknown as Modules['openAI'],
        mcp: McpClientModule as unknown as Modules['mcp'],
      },
    });
  },

  async invoke(scenario, model, signal) {
    const openai = new OpenAI({ baseURL: model.baseURL, apiKey: 'sk-fake' });
    return traceloop.withWorkflow(
      { name: 'support-agent', associationProperties: { scenario } },
      async (): Promise<string> => {
        const mcp = new McpClientModule.Client({ name: 'support-agent', version: '1.0.0' });
        try {
          await mcp.connect(new StdioClientTransport(EVERYTHING_STDIO));
          const listed = (await mcp.listTools()).tools;
          const tools: ChatCompletionTool[] = [
            ...listed.map((tool) => ({
              type: 'function' as const,
              function: {
                name: tool.name,
                description: tool.description ?? '',
                parameters: tool.inputSchema,
              },
            })),
            {
              type: 'function' as const,
              function: {
                name: LOOKUP_ORDER.name,
                description: LOOKUP_ORDER.description,
                parameters: {
                  type: 'object',
                  properties: { orderId: { type: 'string' } },
                  required: ['orderId'],
                },
              },
            },
          ];
          const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: promptFor(scenario) }];
          for (let round = 0; round < 3; round += 1) {
            const completion = await openai.chat.completions.create(
              { model: MODEL, messages, tools },
              { signal },
            );
            const message = completion.choices[0]?.message;
            if (!message) throw new Error('no choice');
            messages.push(message);
            const calls = message.tool_calls ?? [];
            if (calls.length === 0) return message.content ?? '';
            for (const call of calls) {
              if (call.type !== 'function') continue;
              const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
              let content: string;
              try {
                content = await traceloop.withTool({ name: call.function.name }, async () => {
                  if (call.function.name === LOOKUP_ORDER.name) return lookupOrder(String(args.orderId));
                  const result = await mcp.callTool(
                    { name: call.function.name, arguments: args },
                    undefined,
                    {
                      signal,
                    },
                  );
                  return (result.content as Array<{ text?: string }>)
                    .map((part) => part.text ?? '')
                    .join('\n');
                });
              } catch (error) {
                if (signal.aborted) throw error;
                content = `error: ${error instanceof Error ? error.message : String(error)}`;
              }
              messages.push({ role: 'tool', tool_call_id: call.id, content });
            }
          }
          return '';
        } finally {
          await mcp.close();
        }
      },
    );
  },

  async flush() {
    await traceloop.forceFlush();
  },

  async shutdown() {
    await traceloop.forceFlush();
  },
};
