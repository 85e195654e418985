// The TypeScript SDK v2 server of the gateway's interop matrix
// (npm @modelcontextprotocol/server and @modelcontextprotocol/node,
// installed by the Go test at test time). One McpServer definition,
// served on 127.0.0.1 two ways:
//
//   /mcp      2026-07-28, stateless: createMcpHandler with legacy: 'reject'.
//             The tools answer input_required (inputRequired.elicit,
//             inputRequired.elicitUrl) and read the retry's inputResponses.
//   /mcp2025  2025-11-25 with sessions: a NodeStreamableHTTPServerTransport
//             per session. The same tool handlers; the SDK's legacy shim
//             turns their input_required into elicitation/create requests
//             over the session.
//   /done?id  the server's own page for URL mode: opening it completes flow id.
//
// Tools: form asks a name ("form:<name>"); url asks the user to open
// /done?id=<id> and on the retry answers "url:true" when that page was
// opened, "url:false" when not. A declined answer gives "declined", a
// cancelled one "cancelled". Prints "mcp=HOST:PORT" once listening.
import { createServer } from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { createMcpHandler, fromJsonSchema, inputRequired, McpServer } from '@modelcontextprotocol/server';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';

const done = new Set();
let base = '';

const noArgs = fromJsonSchema({ type: 'object', properties: {} });
const outcome = (r, accepted) => (r.action === 'accept' ? accepted() : r.action === 'decline' ? 'declined' : 'cancelled');
const text = (s) => ({ content: [{ type: 'text', text: s }] });

function newServer() {
  const server = new McpServer({ name: 'ts-sdk-matrix', version: '2.4.0' });
  server.registerTool('form', { inputSchema: noArgs }, async (_args, ctx) => {
    const r = ctx.mcpReq.inputResponses?.who;
    if (r) return text(outcome(r, () => 'form:' + r.content?.name));
    return inputRequired({
      inputRequests: {
        who: inputRequired.elicit({
          message: 'Your name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        }),
      },
    });
  });
  server.registerTool('url', { inputSchema: noArgs }, async (_args, ctx) => {
    const r = ctx.mcpReq.inputResponses?.link;
    const id = ctx.mcpReq.requestState();
    if (r && typeof id === 'string') return text(outcome(r, () => 'url:' + done.has(id)));
    const flow = randomBytes(8).toString('hex');
    return inputRequired({
      inputRequests: { link: inputRequired.elicitUrl({ message: 'Open the page', url: `${base}/done?id=${flow}` }) },
      requestState: flow,
    });
  });
  return server;
}

const modern = toNodeHandler(createMcpHandler(newServer, { legacy: 'reject' }));
const sessions = new Map();

async function legacy(req, res) {
  const id = req.headers['mcp-session-id'];
  let transport = typeof id === 'string' ? sessions.get(id) : undefined;
  if (!transport) {
    if (id !== undefined || req.method !== 'POST') {
      res.writeHead(404).end();
      return;
    }
    transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => sessions.set(sid, transport),
      onsessionclosed: (sid) => sessions.delete(sid),
    });
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res);
}

const http = createServer((req, res) => {
  const u = new URL(req.url, base);
  switch (u.pathname) {
    case '/mcp':
      modern(req, res);
      return;
    case '/mcp2025':
      legacy(req, res).catch((err) => {
        console.error(err);
        if (!res.headersSent) res.writeHead(500).end();
      });
      return;
    case '/done':
      done.add(u.searchParams.get('id'));
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('done');
      return;
  }
  res.writeHead(404).end();
});
http.listen(0, '127.0.0.1', () => {
  const a = http.address();
  base = `http://${a.address}:${a.port}`;
  console.log(`mcp=${a.address}:${a.port}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
