// A Streamable HTTP MCP server of revision 2025-11-25 (initialize, sessions,
// the standalone GET stream) for the cases real servers do not show on
// demand; for tests/unit/test-mcp.c.  PORT=n node legacy-http-server.js
// Its tools:
//   instant     answers at once on an event stream that then stays open 30 s
//   ask         asks the client (on the GET stream) ping and roots/list, and
//               answers with what the client said
//   expire      answers, then forgets every session (the next request gets 404)
//   initializes says how many initialize requests came
//   broken      HTTP 500 with a plain-text reason
//   lastdelete  the MCP-Protocol-Version header of the last DELETE
// At /needs-sign-in it answers everything with 401 and a Bearer challenge.
'use strict';
const http = require('http');
const V = '2025-11-25';
let sessions = new Set(), initializes = 0, lastDelete = '(none)', nextSession = 1;
const getStreams = new Map();	// session -> response of its GET stream
const waiting = new Map();	// id of a request of ours -> resolve

function json(res, status, body, headers) {
	res.writeHead(status, { 'Content-Type': 'application/json', ...(headers || {}) });
	res.end(JSON.stringify(body));
}
const result = (id, text) => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });

function ask(session, id, method) {
	return new Promise((resolve) => {
		waiting.set(id, resolve);
		getStreams.get(session).write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, method, params: {} })}\n\n`);
	});
}

http.createServer((req, res) => {
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', async () => {
		const session = req.headers['mcp-session-id'];
		if (req.url === '/needs-sign-in') {	// an OAuth-protected server (RFC 9728 challenge)
			res.writeHead(401, { 'WWW-Authenticate': `Bearer resource_metadata="http://127.0.0.1:${process.env.PORT}/.well-known/oauth-protected-resource/needs-sign-in", scope="files:read"` });
			return res.end();
		}
		if (req.method === 'DELETE') {
			lastDelete = req.headers['mcp-protocol-version'] || '(none)';
			sessions.delete(session);
			res.writeHead(200); return res.end();
		}
		if (req.method === 'GET') {
			if (!sessions.has(session)) { res.writeHead(404); return res.end(); }
			res.writeHead(200, { 'Content-Type': 'text/event-stream' });
			res.write(': open\n\n');
			getStreams.set(session, res);
			return;
		}
		let msg;
		try { msg = JSON.parse(body); } catch (e) { return json(res, 400, {}); }
		if (msg.method === 'server/discover') return json(res, 400, { jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: 'Bad Request: Server not initialized' } });
		if (msg.method === 'initialize') {
			initializes++;
			const s = `s${nextSession++}`;
			sessions.add(s);
			return json(res, 200, { jsonrpc: '2.0', id: msg.id, result: { protocolVersion: V,
				capabilities: { tools: {} }, serverInfo: { name: 'legacy-http', version: '1' } } },
				{ 'Mcp-Session-Id': s });
		}
		if (!sessions.has(session)) return json(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
		if (msg.method === undefined) {	// an answer to one of our requests
			const w = waiting.get(msg.id);
			if (w) { waiting.delete(msg.id); w(msg); }
			res.writeHead(202); return res.end();
		}
		if (msg.id === undefined) { res.writeHead(202); return res.end(); }
		if (msg.method === 'tools/list')
			return json(res, 200, { jsonrpc: '2.0', id: msg.id, result: { tools: ['instant', 'ask', 'expire', 'initializes', 'broken', 'lastdelete'].map((name) => ({ name, inputSchema: { type: 'object' } })) } });
		if (msg.method !== 'tools/call') return json(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
		switch (msg.params.name) {
		case 'instant':
			res.writeHead(200, { 'Content-Type': 'text/event-stream' });
			res.write(`event: message\ndata: ${JSON.stringify(result(msg.id, 'at once'))}\n\n`);
			setTimeout(() => res.end(), 30000);
			return;
		case 'ask': {
			for (let i = 0; i < 50 && !getStreams.has(session); i++)
				await new Promise((r) => setTimeout(r, 100));
			if (!getStreams.has(session)) return json(res, 200, result(msg.id, 'no GET stream'));
			const pong = await ask(session, 'q1', 'ping');
			const roots = await ask(session, 'q2', 'roots/list');
			return json(res, 200, result(msg.id, JSON.stringify([pong.result, roots.result || roots.error])));
		}
		case 'expire':
			json(res, 200, result(msg.id, 'forgotten'));
			sessions = new Set();
			return;
		case 'initializes': return json(res, 200, result(msg.id, `initializes: ${initializes}`));
		case 'broken':
			res.writeHead(500, { 'Content-Type': 'text/plain' });
			return res.end('the database is on fire\n');
		case 'lastdelete': return json(res, 200, result(msg.id, lastDelete));
		}
		json(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'Unknown tool' } });
	});
}).listen(Number(process.env.PORT), '127.0.0.1');
