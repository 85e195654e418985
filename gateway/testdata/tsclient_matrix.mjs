// The TypeScript SDK v2 client (npm @modelcontextprotocol/client, installed
// by the Go test in a temporary directory) runs a list of cases against the
// gateway, each on a new connection: call <tool>, answer every elicitation
// with <action> (an accepted form gets {"name":"Ada"}; an accepted URL is
// first fetched, which completes the upstream's page). One line per case:
//   RESULT <tool> <action> <first text of the result>
//   ERROR <tool> <action> <message>
// Usage: node tsclient_matrix.mjs <endpoint> <token> <2026-07-28|2025-11-25> <tool:action>...
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [endpoint, token, version, ...cases] = process.argv.slice(2);
const say = (line) => process.stdout.write(line + '\n');

for (const c of cases) {
  const [tool, action] = c.split(':');
  const options = { capabilities: { elicitation: { form: {}, url: {} } } };
  if (version === '2026-07-28') {
    options.versionNegotiation = { mode: { pin: '2026-07-28' } };
  }
  const client = new Client({ name: 'ts-gateway-matrix', version: '2.4.0' }, options);
  client.setRequestHandler('elicitation/create', async (request) => {
    const p = request.params;
    if (action !== 'accept') return { action };
    if (p.mode === 'url') {
      await fetch(p.url);
      return { action: 'accept' };
    }
    return { action: 'accept', content: { name: 'Ada' } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { Authorization: 'Bearer ' + token } },
  });
  try {
    await client.connect(transport);
    const result = await client.callTool({ name: tool, arguments: {} });
    say(`RESULT ${tool} ${action} ${result.content[0].text}`);
  } catch (err) {
    say(`ERROR ${tool} ${action} ` + String(err && err.message ? err.message : err).replace(/\n/g, ' '));
  } finally {
    await client.close().catch(() => {});
  }
}
