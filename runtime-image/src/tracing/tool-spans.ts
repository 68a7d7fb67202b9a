import type { ToolSet } from 'ai';
import { SPAN_KIND, type InvokeTrace } from './spans.js';

/**
 * The agent's tools, each recording an `execute_tool <name>` span under the invoke's root
 * around its execute. A failing tool ends its span as an error and throws on unchanged,
 * so the SDK reports it to the model as before.
 */
export function traceTools(tools: ToolSet, trace: InvokeTrace): ToolSet {
  const traced: ToolSet = {};
  for (const [name, tool] of Object.entries(tools)) {
    const execute = tool.execute;
    if (execute === undefined) {
      traced[name] = tool;
      continue;
    }
    traced[name] = {
      ...tool,
      execute: async (input: unknown, options: Parameters<typeof execute>[1]) => {
        const span = trace.startChild(`execute_tool ${name}`, SPAN_KIND.INTERNAL, {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': name,
          'gen_ai.tool.call.id': options.toolCallId,
          'gen_ai.tool.type': 'function',
        });
        if (trace.recordContent) span.set('gen_ai.tool.call.arguments', JSON.stringify(input) ?? 'null');
        try {
          const output: unknown = await execute(input, options);
          if (trace.recordContent) span.set('gen_ai.tool.call.result', JSON.stringify(output) ?? 'null');
          span.end();
          return output;
        } catch (error) {
          // A tool's error text may quote its arguments: kept only with content.
          const message = trace.recordContent && error instanceof Error ? error.message : undefined;
          span.fail(error instanceof Error && error.name !== 'Error' ? error.name : '_OTHER', message);
          throw error;
        }
      },
    } as ToolSet[string];
  }
  return traced;
}
