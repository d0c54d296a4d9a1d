// bench/connectors: the official TypeScript SDK client (@modelcontextprotocol/sdk
// Client), required from SDK_DIR (the package directory).
//   node sdk-client.js stdio N command [args...]
//     spawn (StdioClientTransport) -> initialize -> initialized -> tools/list,
//     closed after each; prints "open_to_tools_ms tools" per iteration.
//   node sdk-client.js http N URL TOOL
//     StreamableHTTPClientTransport: connect, then N calls of TOOL, each timed
//     from the call to its answer; prints "call_ms" per call.
'use strict';
const path = require('path');
const sdk = process.env.SDK_DIR;
const { Client } = require(path.join(sdk, 'dist/cjs/client/index.js'));
const { StdioClientTransport } = require(path.join(sdk, 'dist/cjs/client/stdio.js'));
const { StreamableHTTPClientTransport } = require(path.join(sdk, 'dist/cjs/client/streamableHttp.js'));
const [mode, n, ...rest] = process.argv.slice(2);
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

async function stdio(cmd, args) {
	const t0 = process.hrtime.bigint();
	const client = new Client({ name: 'bench', version: '1' });
	await client.connect(new StdioClientTransport({ command: cmd, args, stderr: 'ignore' }));
	const { tools } = await client.listTools();
	const t = ms(t0);
	await client.close();
	return `${t.toFixed(1)} ${tools.length}`;
}

(async () => {
	if (mode === 'stdio') {
		for (let i = 0; i < Number(n); i++)
			console.log(await stdio(rest[0], rest.slice(1)));
		return;
	}
	const [url, tool] = rest;
	const client = new Client({ name: 'bench', version: '1' });
	await client.connect(new StreamableHTTPClientTransport(new URL(url)));
	for (let i = 0; i < Number(n); i++) {
		const t0 = process.hrtime.bigint();
		const r = await client.callTool({ name: tool, arguments: { text: `x${i}` } });
		const t = ms(t0);
		if (r.content?.[0]?.text !== `x${i}`) throw new Error(`wrong answer ${JSON.stringify(r)}`);
		console.log(t.toFixed(1));
	}
	await client.close();
})().catch((e) => { console.error(e); process.exit(1); });
