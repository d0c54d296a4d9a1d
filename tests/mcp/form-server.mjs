// A stdio MCP server made with the TypeScript SDK (from the test cache:
// SDK_MODULES is server-everything's node_modules) whose tool "pick" asks a
// form with a multi-select field (type array, titled choices) and an email
// field, and answers with the content it got; the SDK checks that content
// against the form's schema first (a list sent as a string fails the call).
const mods = process.env.SDK_MODULES;
const { McpServer } = await import(`${mods}/@modelcontextprotocol/sdk/dist/esm/server/mcp.js`);
const { StdioServerTransport } = await import(`${mods}/@modelcontextprotocol/sdk/dist/esm/server/stdio.js`);

const server = new McpServer({ name: 'form-server', version: '1.0.0' });
server.registerTool('pick', { description: 'Asks which fruits', inputSchema: {} }, async () => {
	const r = await server.server.elicitInput({
		message: 'Which fruits?',
		requestedSchema: {
			type: 'object',
			properties: {
				fruits: { type: 'array', minItems: 1, maxItems: 2,
					items: { anyOf: [{ const: 'apple', title: 'Apple' }, { const: 'pear', title: 'Pear' },
						{ const: 'fig', title: 'Fig' }] } },
				email: { type: 'string', format: 'email' },
			},
			required: ['fruits'],
		},
	});
	return { content: [{ type: 'text', text: `${r.action}: ${JSON.stringify(r.content)}` }] };
});
await server.connect(new StdioServerTransport());
