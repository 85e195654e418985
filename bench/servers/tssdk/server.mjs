// The TypeScript SDK v2 benchmark peer: @modelcontextprotocol/server with
// the echo tool of the `call` scenario, served statelessly for 2026-07-28
// (createMcpHandler, legacy: 'reject', responseMode: 'json') through
// @modelcontextprotocol/node's toNodeHandler on 127.0.0.1.
//
// scripts/bench installs the two packages into a cache directory at bench
// time (they are never committed) and runs
//
//	node server.mjs [--addr 127.0.0.1:0]
//
// with NODE_PATH unset and the packages resolved from that directory. It
// prints "mcp=ADDR" on stdout once listening, as the Go servers do.
import { createServer } from 'node:http';
import { createMcpHandler, fromJsonSchema, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';

const EchoSchema = {
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
};

const echoInput = fromJsonSchema(EchoSchema);

function newServer() {
  const server = new McpServer({ name: 'mcpbench', version: '1.0.0' });
  server.registerTool('echo', { inputSchema: echoInput }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

const handler = toNodeHandler(createMcpHandler(newServer, { legacy: 'reject', responseMode: 'json' }));

let addr = '127.0.0.1:0';
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--addr' || process.argv[i] === '-addr') addr = process.argv[++i];
}
const sep = addr.lastIndexOf(':');
const host = addr.slice(0, sep);
if (host !== '127.0.0.1' && host !== '::1' && host !== 'localhost') {
  console.error(`tssdk: listen address ${addr} is not loopback`);
  process.exit(2);
}
const http = createServer((req, res) => {
  if (req.url !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  handler(req, res);
});
http.keepAliveTimeout = 300_000;
http.listen(Number(addr.slice(sep + 1)), host, () => {
  const a = http.address();
  console.log(`mcp=${a.address}:${a.port}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => http.close(() => process.exit(0)));
