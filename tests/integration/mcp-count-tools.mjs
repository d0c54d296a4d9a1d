// Lists the tools of an MCP server over stdio with the reference SDK, prints how many.
// usage: node mcp-count-tools.mjs SDK_DIR COMMAND [ARG...]
const [sdk, command, ...args] = process.argv.slice(2);
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);
const client = new Client({ name: "taskdeck-test", version: "1" });
await client.connect(new StdioClientTransport({ command, args }));
let n = 0, cursor;
do {
	const page = await client.listTools(cursor ? { cursor } : {});
	n += page.tools.length;
	cursor = page.nextCursor;
} while (cursor);
console.log(n);
await client.close();
