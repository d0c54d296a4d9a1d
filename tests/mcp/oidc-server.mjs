// A real OpenID Connect authorization server (panva's oidc-provider, pinned in
// scripts/test-deps) in front of an MCP server made with the TypeScript SDK
// (stateless Streamable HTTP), for tests/mcp/oauth-oidc.sh.
//   AS_PORT=a MCP_PORT=m OIDC_MODULES=… SDK_MODULES=… node oidc-server.mjs
// The authorization server (issuer http://127.0.0.1:a) registers clients
// dynamically, wants PKCE, knows the resource http://127.0.0.1:m/mcp (scope
// "notes") and, as oidc-provider does by default, issues a refresh token only
// for the offline_access scope asked with prompt=consent.  Its sign-in and
// consent pages answer at once (the "user" is always user-1): a browser that
// follows the redirects (and keeps the cookies) signs in.
// The MCP server at /mcp takes the authorization server's access tokens for
// it; its tools: note (answers "noted"), wait {ms} (answers after ms) and
// revoke (revokes the access token of its own call, as an administrator
// would, then answers).
// At /wrong-issuer a resource names the authorization server by another name; at
// /plain-http one names an authorization server elsewhere over plain http.
//   GET /stats           {refreshes, refused, applicationType}: refresh grants,
//                        tokens refused, the application_type a client registered with
//   POST /ttl?s=n        access tokens issued from now on live n s
//   POST /revoke-last    revokes the last access token it took
const { AS_PORT, MCP_PORT, OIDC_MODULES, SDK_MODULES } = process.env;
const { default: Provider } = await import(`${OIDC_MODULES}/oidc-provider/lib/index.js`);
const { McpServer } = await import(`${SDK_MODULES}/@modelcontextprotocol/sdk/dist/esm/server/mcp.js`);
const { StreamableHTTPServerTransport } = await import(
	`${SDK_MODULES}/@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js`);
const { z } = await import(`${SDK_MODULES}/zod/index.js`);
import http from 'node:http';

const issuer = `http://127.0.0.1:${AS_PORT}`;
const resource = `http://127.0.0.1:${MCP_PORT}/mcp`;
let ttl = 3600, refreshes = 0, refused = 0, lastToken;

const provider = new Provider(issuer, {
	clients: [],
	scopes: ['openid', 'offline_access', 'notes'],
	claims: { openid: ['sub'] },
	findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
	interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
	ttl: { AccessToken: () => ttl, AuthorizationCode: 60, Grant: 3600, Interaction: 600,
		RefreshToken: 86400, Session: 3600 },
	features: {
		devInteractions: { enabled: false },
		registration: { enabled: true },
		resourceIndicators: {
			enabled: true,
			defaultResource: () => resource,
			useGrantedResource: () => true,
			getResourceServerInfo: (ctx, indicator) => {
				if (indicator !== resource) throw new Provider.errors.InvalidTarget();
				return { scope: 'notes', audience: resource, accessTokenTTL: ttl,
					accessTokenFormat: 'opaque' };
			},
		},
	},
});
let applicationType = '(none)';
provider.on('registration_create.success', (ctx, client) => {
	applicationType = ctx.oidc.body?.application_type ?? '(none)';
});
provider.on('grant.success', (ctx) => {
	if (ctx.oidc.params.grant_type === 'refresh_token') refreshes++;
});

// The sign-in and consent pages, answered at once.
async function interaction(req, res) {
	const { prompt, params, session } = await provider.interactionDetails(req, res);
	let result;
	if (prompt.name === 'login') {
		result = { login: { accountId: 'user-1' } };
	} else {
		const grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
		const d = prompt.details;
		if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
		for (const [ind, scopes] of Object.entries(d.missingResourceScopes || {}))
			grant.addResourceScope(ind, scopes.join(' '));
		result = { consent: { grantId: await grant.save() } };
	}
	await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

const asServer = http.createServer((req, res) => {
	if (req.url.startsWith('/interaction/'))
		return interaction(req, res).catch((e) => { res.writeHead(500); res.end(String(e)); });
	return provider.callback()(req, res);
});
asServer.listen(Number(AS_PORT), '127.0.0.1');

function mcpServer(token) {
	const server = new McpServer({ name: 'oidc-notes', version: '1.0.0' });
	server.registerTool('note', { description: 'Notes', inputSchema: {} },
		async () => ({ content: [{ type: 'text', text: 'noted' }] }));
	server.registerTool('wait', { description: 'Answers after ms', inputSchema: { ms: z.number() } },
		async ({ ms }) => {
			await new Promise((r) => setTimeout(r, ms));
			return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
		});
	server.registerTool('revoke', { description: 'Revokes the token of this call', inputSchema: {} },
		async () => {
			await token.destroy();
			return { content: [{ type: 'text', text: 'revoked' }] };
		});
	return server;
}

const json = (res, status, body) => {
	res.writeHead(status, { 'Content-Type': 'application/json' });
	res.end(JSON.stringify(body));
};

http.createServer(async (req, res) => {
	const url = new URL(req.url, `http://127.0.0.1:${MCP_PORT}`);
	if (url.pathname === '/stats') return json(res, 200, { refreshes, refused, applicationType });
	if (url.pathname === '/revoke-last') { await lastToken?.destroy(); return json(res, 200, {}); }
	if (url.pathname === '/ttl') { ttl = Number(url.searchParams.get('s')); return json(res, 200, { ttl }); }
	if (url.pathname === '/.well-known/oauth-protected-resource/mcp')
		return json(res, 200, { resource, authorization_servers: [issuer], scopes_supported: ['notes'] });
	// A resource whose metadata names this authorization server under another name
	// (localhost): its metadata then names an issuer that is not the one asked for.
	if (url.pathname === '/.well-known/oauth-protected-resource/wrong-issuer')
		return json(res, 200, { resource: `http://127.0.0.1:${MCP_PORT}/wrong-issuer`,
			authorization_servers: [`http://localhost:${AS_PORT}`] });
	// One whose authorization server is elsewhere, over plain http.
	if (url.pathname === '/.well-known/oauth-protected-resource/plain-http')
		return json(res, 200, { resource: `http://127.0.0.1:${MCP_PORT}/plain-http`,
			authorization_servers: ['http://as.example.com'] });
	if (url.pathname === '/wrong-issuer' || url.pathname === '/plain-http') {
		res.writeHead(401, { 'WWW-Authenticate':
			`Bearer resource_metadata="http://127.0.0.1:${MCP_PORT}/.well-known/oauth-protected-resource${url.pathname}"` });
		return res.end();
	}
	if (url.pathname !== '/mcp') return json(res, 404, {});
	const auth = req.headers.authorization || '';
	const value = auth.startsWith('Bearer ') ? auth.slice(7) : '';
	const token = value ? await provider.AccessToken.find(value) : undefined;
	if (!token || token.isExpired || token.aud !== resource) {
		if (value) refused++;
		res.writeHead(401, { 'WWW-Authenticate':
			`Bearer resource_metadata="http://127.0.0.1:${MCP_PORT}/.well-known/oauth-protected-resource/mcp"` });
		return res.end();
	}
	lastToken = token;
	const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined,
		enableJsonResponse: true });
	const server = mcpServer(token);
	res.on('close', () => { transport.close(); server.close(); });
	await server.connect(transport);
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', () => transport.handleRequest(req, res, body ? JSON.parse(body) : undefined));
}).listen(Number(MCP_PORT), '127.0.0.1');
