// A Streamable HTTP MCP server made with the TypeScript SDK (from the test cache:
// SDK_MODULES is server-everything's node_modules) whose tool "one" asks a form
// on the call's event stream and gives up on it after GIVEUP_MS (the SDK's own
// request timeout, which sends notifications/cancelled for the form on that
// stream), then answers "the server gave up on its form".  For forms.sh.
//   GIVEUP_MS=ms SDK_MODULES=dir node giveup-http-server.mjs  (prints the port it listens on)
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const mods = process.env.SDK_MODULES;
const { McpServer } = await import(`${mods}/@modelcontextprotocol/sdk/dist/esm/server/mcp.js`);
const { StreamableHTTPServerTransport } =
	await import(`${mods}/@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js`);
const { ElicitResultSchema } = await import(`${mods}/@modelcontextprotocol/sdk/dist/esm/types.js`);

function newServer() {
	const server = new McpServer({ name: 'giveup-http', version: '1.0.0' });
	server.registerTool('one', { description: 'Asks a form nobody answers in time', inputSchema: {} },
		async (_args, extra) => {
			try {
				const r = await extra.sendRequest({ method: 'elicitation/create', params: {
					message: 'Still there?',
					requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
				} }, ElicitResultSchema, { timeout: Number(process.env.GIVEUP_MS || 500) });
				return { content: [{ type: 'text', text: `answered: ${r.action}` }] };
			} catch (e) {
				return { content: [{ type: 'text', text: 'the server gave up on its form' }] };
			}
		});
	return server;
}

const sessions = new Map();
const srv = http.createServer((req, res) => {
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', async () => {
		const sid = req.headers['mcp-session-id'];
		let parsed;
		try { parsed = body ? JSON.parse(body) : undefined; } catch { parsed = undefined; }
		let transport = sid ? sessions.get(sid) : undefined;
		if (!transport && req.method === 'POST' && parsed && parsed.method === 'initialize') {
			transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(),
				onsessioninitialized: (id) => sessions.set(id, transport) });
			await newServer().connect(transport);
		}
		if (!transport) {
			res.writeHead(req.method === 'POST' && parsed && parsed.method === 'server/discover' ? 200 : 400,
				{ 'Content-Type': 'application/json' });
			res.end(JSON.stringify({ jsonrpc: '2.0', id: parsed ? parsed.id ?? null : null,
				error: { code: -32601, message: 'Method not found' } }));
			return;
		}
		await transport.handleRequest(req, res, parsed);
	});
});
srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
