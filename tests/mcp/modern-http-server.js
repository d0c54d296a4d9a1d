// A Streamable HTTP MCP server of revision 2026-07-28 only (server/discover, no
// initialize) that demands "Authorization: Bearer <TOKEN>" and the per-request
// headers and _meta of that revision; for tests/unit/test-mcp.c.
//   PORT=n TOKEN=t node modern-http-server.js
'use strict';
const http = require('http');
const V = '2026-07-28';

function reply(res, status, body) {
	res.writeHead(status, { 'Content-Type': 'application/json' });
	res.end(JSON.stringify(body));
}

http.createServer((req, res) => {
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', () => {
		if (req.headers.authorization !== `Bearer ${process.env.TOKEN}`)
			return reply(res, 401, { error: 'unauthorized' });
		let msg;
		try { msg = JSON.parse(body); } catch (e) { return reply(res, 400, {}); }
		const meta = (msg.params && msg.params._meta) || {};
		const err = (code, message) => reply(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code, message } });
		if (msg.method === 'initialize')
			return err(-32601, 'Method not found');
		if (meta['io.modelcontextprotocol/protocolVersion'] !== V ||
		    req.headers['mcp-protocol-version'] !== V || req.headers['mcp-method'] !== msg.method)
			return err(-32022, 'Unsupported protocol version');
		if (msg.method === 'server/discover')
			return reply(res, 200, { jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete',
				supportedVersions: [V], capabilities: { tools: {} },
				serverInfo: { name: 'modern-http', version: '1' } } });
		if (msg.method === 'tools/list')
			return reply(res, 200, { jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete',
				tools: [{ name: 'whoami', inputSchema: { type: 'object' } }] } });
		if (msg.method === 'tools/call') {
			// An SSE answer, as Streamable HTTP allows.
			res.writeHead(200, { 'Content-Type': 'text/event-stream' });
			res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: {} })}\n\n`);
			res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id,
				result: { content: [{ type: 'text', text: 'authorized' }] } })}\n\n`);
			return;
		}
		err(-32601, 'Method not found');
	});
}).listen(Number(process.env.PORT), '127.0.0.1');
