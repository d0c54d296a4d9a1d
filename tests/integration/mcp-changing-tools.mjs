// A stdio MCP server whose tool list grows: it offers `first`; once `first` is
// called it also offers `second` and says so (notifications/tools/list_changed).
import { createInterface } from 'node:readline';

let grown = false;
const tool = (name) => ({ name, description: `the ${name} tool`,
  inputSchema: { type: 'object', properties: {} } });
const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');

createInterface({ input: process.stdin }).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined || m.method === undefined) return;
  switch (m.method) {
    case 'initialize':
      send({ id: m.id, result: { protocolVersion: m.params.protocolVersion,
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'changing', version: '1.0.0' } } });
      break;
    case 'tools/list':
      send({ id: m.id, result: { tools: grown ? [tool('first'), tool('second')] : [tool('first')] } });
      break;
    case 'tools/call':
      if (m.params.name === 'first' && !grown) {
        grown = true;
        send({ method: 'notifications/tools/list_changed' });
      }
      send({ id: m.id, result: { content: [{ type: 'text', text: `${m.params.name} done` }] } });
      break;
    default:
      send({ id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
