// A stdio MCP server built with tmcp (an MCP server implementation
// independent of the TypeScript SDK, the one @sveltejs/mcp uses), not with
// the SDK: its server/discover offers only the draft revision 2026-07-28,
// and it checks each request's _meta as that revision says.  The packages
// come from the test cache: TMCP_MODULES is their node_modules directory.
// Tools: echo (text back) and pick (a multi-select list back).
const mods = process.env.TMCP_MODULES;
const { McpServer } = await import(`${mods}/tmcp/src/index.js`);
const { StdioTransport } = await import(`${mods}/@tmcp/transport-stdio/src/index.js`);
const { ValibotJsonSchemaAdapter } = await import(`${mods}/@tmcp/adapter-valibot/src/index.js`);
const v = await import(`${mods}/valibot/dist/index.mjs`);

const server = new McpServer(
	{ name: 'tmcp-notes', version: '1.0.0', description: 'a tmcp server for the tests' },
	{
		adapter: new ValibotJsonSchemaAdapter(),
		capabilities: { tools: { listChanged: true } },
		instructions: process.env.TMCP_INSTRUCTIONS ?? undefined,
	},
);

server.tool(
	{
		name: 'echo',
		description: 'Says the text back',
		schema: v.object({ text: v.string() }),
	},
	async ({ text }) => ({ content: [{ type: 'text', text: `tmcp says: ${text}` }] }),
);

new StdioTransport(server).listen();
