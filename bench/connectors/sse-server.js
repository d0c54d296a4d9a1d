// bench/connectors: a minimal Streamable HTTP MCP server for timing the
// resumption of an SSE stream.  Every POST of a request answers on an event
// stream that starts with a priming event (an id, empty data, "retry: RETRY").
// tools/call of "echo" then sends the answer on that stream; tools/call of
// "echo_drop" closes the stream before the answer, which the client gets from
// a GET with Last-Event-ID.  A GET without Last-Event-ID is refused (405).
// Prints "listening PORT" once ready.
//   node sse-server.js [RETRY_MS]
'use strict';
const http = require('http');
const retry = Number(process.argv[2] ?? 0);
const held = new Map();          // event id of a dropped stream -> its answer
let nextEvent = 1, sessions = 0;

function sse(res, headers) {
	res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache',
		...headers });
}
const event = (id, msg) => `id: ${id}\ndata: ${msg ? JSON.stringify(msg) : ''}\n\n`;

function answer(msg) {
	switch (msg.method) {
	case 'initialize':
		return { protocolVersion: msg.params?.protocolVersion ?? '2025-11-25',
			capabilities: { tools: {} }, serverInfo: { name: 'sse-bench', version: '1' } };
	case 'tools/list':
		return { tools: ['echo', 'echo_drop'].map((name) => ({ name,
			inputSchema: { type: 'object', properties: { text: { type: 'string' } } } })) };
	case 'tools/call':
		return { content: [{ type: 'text', text: String(msg.params?.arguments?.text ?? '') }] };
	case 'ping':
		return {};
	}
	return null;
}

const server = http.createServer((req, res) => {
	if (req.method === 'DELETE') return res.writeHead(200).end();
	if (req.method === 'GET') {
		const last = req.headers['last-event-id'];
		if (last === undefined || !held.has(last)) return res.writeHead(405).end();
		const msg = held.get(last);
		held.delete(last);
		sse(res);
		return res.end(event(nextEvent++, msg));
	}
	if (req.method !== 'POST') return res.writeHead(405).end();
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', () => {
		let msg;
		try { msg = JSON.parse(body); } catch { return res.writeHead(400).end(); }
		if (msg.id === undefined) return res.writeHead(202).end();
		const result = answer(msg);
		const reply = result ? { jsonrpc: '2.0', id: msg.id, result } : { jsonrpc: '2.0',
			id: msg.id, error: { code: -32601, message: 'Method not found' } };
		const headers = msg.method === 'initialize' ? { 'Mcp-Session-Id': `s${++sessions}` } : {};
		const priming = nextEvent++;
		sse(res, headers);
		res.write(`retry: ${retry}\n` + event(priming));
		if (msg.method === 'tools/call' && msg.params?.name === 'echo_drop') {
			held.set(String(priming), reply);
			return res.end();
		}
		res.end(event(nextEvent++, reply));
	});
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
