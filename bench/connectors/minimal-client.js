// bench/connectors: the reference, a minimal MCP client in node: spawns the
// server, sends initialize, notifications/initialized and tools/list (no
// probe, no pagination, no bounds), and stops at the tools/list answer.
// Prints one line per iteration: "open_to_tools_ms tools".
//   node minimal-client.js N command [args...]
'use strict';
const { spawn } = require('child_process');
const [n, cmd, ...args] = process.argv.slice(2);

function once() {
	return new Promise((resolve, reject) => {
		const t0 = process.hrtime.bigint();
		const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'ignore'] });
		let pending = '';
		const send = (m) => child.stdin.write(JSON.stringify(m) + '\n');
		child.stdout.on('data', (chunk) => {
			pending += chunk;
			let nl;
			while ((nl = pending.indexOf('\n')) >= 0) {
				const msg = JSON.parse(pending.slice(0, nl));
				pending = pending.slice(nl + 1);
				if (msg.id === 1) {
					send({ jsonrpc: '2.0', method: 'notifications/initialized' });
					send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
				} else if (msg.id === 2) {
					const ms = Number(process.hrtime.bigint() - t0) / 1e6;
					child.on('exit', () => resolve([ms, msg.result.tools.length]));
					child.kill('SIGKILL');
				}
			}
		});
		child.on('error', reject);
		send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
			protocolVersion: '2025-11-25', capabilities: {},
			clientInfo: { name: 'bench', version: '1' } } });
	});
}

(async () => {
	for (let i = 0; i < Number(n); i++) {
		const [ms, tools] = await once();
		console.log(`${ms.toFixed(1)} ${tools}`);
	}
})().catch((e) => { console.error(e); process.exit(1); });
