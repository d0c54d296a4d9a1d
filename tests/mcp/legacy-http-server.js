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
// At /needs-sign-in it answers everything with 401 and a Bearer challenge; at
// /oauth/mcp it wants tokens of its own authorization server (below).
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

// At /oauth/mcp the same server wants OAuth tokens from its own authorization
// server at /as: a first token that expires after 1 s, with a refresh token.
const base = () => `http://127.0.0.1:${process.env.PORT}`;
const tokens = new Map();	// access token -> expiry (ms)
let refreshes = 0, refreshClient = null;
const assertions = [];	// the workload identity tokens of jwt-bearer grants, in order
function oauth(req, res, body) {
	const url = new URL(req.url, base());
	const form = new URLSearchParams(body);
	if (url.pathname === '/.well-known/oauth-protected-resource/oauth/mcp')
		return json(res, 200, { resource: `${base()}/oauth/mcp`, authorization_servers: [`${base()}/as`] }), true;
	if (url.pathname === '/.well-known/oauth-authorization-server/as')
		return json(res, 200, { issuer: `${base()}/as`, authorization_endpoint: `${base()}/as/authorize`,
			token_endpoint: `${base()}/as/token`, registration_endpoint: `${base()}/as/register`,
			response_types_supported: ['code'], grant_types_supported: ['authorization_code', 'refresh_token'],
			token_endpoint_auth_methods_supported: ['none'], code_challenge_methods_supported: ['S256'] }), true;
	if (url.pathname === '/as/register') return json(res, 201, { client_id: 'client-1' }), true;
	if (url.pathname === '/as/authorize') {
		const to = new URL(url.searchParams.get('redirect_uri'));
		to.searchParams.set('code', 'code-1');
		to.searchParams.set('state', url.searchParams.get('state'));
		res.writeHead(302, { Location: to.toString() });
		return res.end(), true;
	}
	if (url.pathname === '/as/token') {
		if (form.get('grant_type') === 'authorization_code' && form.get('code') === 'code-1') {
			tokens.set('access-1', Date.now() + 1000);
			return json(res, 200, { access_token: 'access-1', token_type: 'Bearer', expires_in: 1, refresh_token: 'refresh-secret-1' }), true;
		}
		if (form.get('grant_type') === 'refresh_token' && form.get('refresh_token') === 'refresh-secret-1') {
			refreshes++;
			// The client of the renewal as HTTP Basic said it ("" for a public client).
			const basic = /^Basic (.+)$/.exec(req.headers.authorization || '');
			refreshClient = basic ? Buffer.from(basic[1], 'base64').toString('utf8') : '';
			tokens.set('access-2', Date.now() + 3600000);
			return json(res, 200, { access_token: 'access-2', token_type: 'Bearer', expires_in: 3600, refresh_token: 'refresh-secret-2' }), true;
		}
		// A workload's identity token (RFC 7523): a token for 1 s, no refresh token.
		if (form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
			const a = form.get('assertion') || '';
			assertions.push(a);
			if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(a) || form.get('client_id') !== 'workload-1')
				return json(res, 400, { error: 'invalid_grant', error_description: 'not a workload token' }), true;
			tokens.set(`wif-${assertions.length}`, Date.now() + 1000);
			return json(res, 200, { access_token: `wif-${assertions.length}`, token_type: 'Bearer', expires_in: 1 }), true;
		}
		return json(res, 400, { error: 'invalid_grant' }), true;
	}
	if (url.pathname === '/as/stats') return json(res, 200, { refreshes, refreshClient, assertions }), true;
	if (url.pathname === '/oauth/mcp') {
		const auth = req.headers.authorization || '';
		const expiry = tokens.get(auth.replace(/^Bearer /, ''));
		if (expiry === undefined || expiry < Date.now()) {
			res.writeHead(401, { 'WWW-Authenticate': `Bearer resource_metadata="${base()}/.well-known/oauth-protected-resource/oauth/mcp"` });
			return res.end(), true;
		}
	}
	return false;
}

http.createServer((req, res) => {
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', async () => {
		const session = req.headers['mcp-session-id'];
		if (oauth(req, res, body)) return;
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
