// The TypeScript SDK v2 client (npm @modelcontextprotocol/client, installed
// by the Go test in a temporary directory) calls connect_billing on a
// 2026-07-28 server and answers the URL-mode elicitation with accept at
// once, before the user has been to the page. Lines on stdout tell the Go
// test what happens:
//   ELICIT <url>      the elicitation arrived (answered accept)
//   RESULT <json>     the tool result
//   ERROR <message>   the call failed
// Usage: node tsclient_urlwait.mjs <mcp endpoint> <bearer token> <tool>
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [endpoint, token, tool] = process.argv.slice(2);
const say = (line) => process.stdout.write(line + '\n');

const client = new Client(
  { name: 'ts-urlwait', version: '2.4.0' },
  {
    capabilities: { elicitation: { form: {}, url: {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  },
);
client.setRequestHandler('elicitation/create', async (request) => {
  say('ELICIT ' + request.params.url);
  return { action: 'accept' };
});
const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { Authorization: 'Bearer ' + token } },
});
try {
  await client.connect(transport);
  const result = await client.callTool({ name: tool, arguments: {} });
  say('RESULT ' + JSON.stringify(result));
} catch (err) {
  say('ERROR ' + String(err && err.message ? err.message : err).replace(/\n/g, ' '));
} finally {
  await client.close().catch(() => {});
}
