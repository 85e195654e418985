// The TypeScript SDK v2 client (npm @modelcontextprotocol/client, installed
// by the Go test at test time) launches `elicitd --stdio` with the stdio
// transport and calls export_report (a form) and connect_billing (a
// URL-mode page) on it. Lines on stdout tell the Go test what happens;
// lines on stdin tell this script when the page is done:
//   VERSION <v>       the protocol version in use
//   FORM <message>    a form elicitation arrived (answered with summary, "TS label")
//   ELICIT <url>      a URL elicitation arrived; the script waits for a
//                     line on stdin (the Go test did the page) and accepts
//   RESULT <tool> <json>   a tool result
//   ERROR <message>   something failed
// Usage: node ts_stdio_client.mjs <version: 2026-07-28 | legacy> <elicitd> <args...>
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createInterface } from 'node:readline';

const [version, command, ...args] = process.argv.slice(2);
const say = (line) => process.stdout.write(line + '\n');
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const client = new Client(
  { name: 'ts-stdio', version: '2.4.0' },
  {
    capabilities: { elicitation: { form: {}, url: {} } },
    versionNegotiation: { mode: version === 'legacy' ? 'legacy' : { pin: version } },
  },
);
client.setRequestHandler('elicitation/create', async (request) => {
  if (request.params.mode === 'url') {
    say('ELICIT ' + request.params.url);
    await lines.next();
    return { action: 'accept' };
  }
  say('FORM ' + request.params.message.replace(/\n/g, ' '));
  return { action: 'accept', content: { detail: 'summary', label: 'TS label' } };
});
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' });
try {
  await client.connect(transport);
  say('VERSION ' + client.getNegotiatedProtocolVersion());
  for (const [tool, toolArgs] of [['export_report', { period: '2026-Q2', dataset: 'sales' }], ['connect_billing', {}]]) {
    const result = await client.callTool({ name: tool, arguments: toolArgs });
    say('RESULT ' + tool + ' ' + JSON.stringify(result));
  }
} catch (err) {
  say('ERROR ' + String(err && err.message ? err.message : err).replace(/\n/g, ' '));
} finally {
  await client.close().catch(() => {});
  process.exit(0);
}
