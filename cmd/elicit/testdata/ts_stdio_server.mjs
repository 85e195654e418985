// A stdio MCP server on the TypeScript SDK v2 (npm @modelcontextprotocol/server,
// installed by the Go test at test time), with one multi round-trip tool:
// greet asks the user's name in a form-mode elicitation (an input_required
// result on 2026-07-28), then greets them. The Go test launches it through
// `elicit call greet -- node ts_stdio_server.mjs`.
import { McpServer, inputRequired, acceptedContent, inputResponse } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

serveStdio(() => {
  const server = new McpServer({ name: 'ts-peer', version: '2.4.0' }, { capabilities: { tools: {} } });
  server.registerTool('greet', { description: 'Asks your name, then greets you.' }, async (ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'who');
    const content = acceptedContent(ctx.mcpReq.inputResponses, 'who');
    if (content && typeof content.name === 'string') {
      return { content: [{ type: 'text', text: `Hello, ${content.name}, from the TypeScript SDK!` }] };
    }
    if (answer && answer.kind !== 'missing' && !content) {
      return { content: [{ type: 'text', text: 'No name, no greeting.' }], isError: true };
    }
    return inputRequired({
      inputRequests: {
        who: inputRequired.elicit({
          message: 'What is your name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string', title: 'Your name', minLength: 1 } }, required: ['name'] },
        }),
      },
    });
  });
  return server;
});
