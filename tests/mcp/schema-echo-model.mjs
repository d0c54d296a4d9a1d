// A loopback stand-in for an OpenAI Chat Completions model (POST /v1/chat/completions,
// streamed as api.openai.com streams it: chat.completion.chunk deltas, the tool call's
// head then its arguments, a usage chunk, [DONE]) that does what the conformance
// scenario json-schema-2020-12-preservation asks of a model: it calls the tool whose
// name ends in "__json_schema_echo" with {"schema": <the parameters the request gave
// the tool ending in "__json_schema_2020_12_tool">}, exactly as they reached it; once
// that call has an answer, it says "done".  So the schema is checked on its whole way:
// from the MCP server through taskdeck to the model's request, and back as arguments.
// Prints the port it listens on.
import http from 'node:http';

const chunk = (delta, finish) => `data: ${JSON.stringify({ id: 'chatcmpl-echo',
	object: 'chat.completion.chunk', created: 1700000000, model: 'echo',
	choices: [{ index: 0, delta, logprobs: null, finish_reason: finish ?? null }] })}\n\n`;
const usage = `data: ${JSON.stringify({ id: 'chatcmpl-echo', object: 'chat.completion.chunk',
	created: 1700000000, model: 'echo', choices: [],
	usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`;

const srv = http.createServer((req, res) => {
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', () => {
		let r;
		try { r = JSON.parse(body); } catch { r = null; }
		if (req.method !== 'POST' || !req.url.endsWith('/chat/completions') || !r) {
			res.writeHead(404, { 'Content-Type': 'application/json' });
			res.end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
			return;
		}
		const tools = (r.tools || []).map((t) => t.function);
		const focal = tools.find((f) => f.name.endsWith('__json_schema_2020_12_tool'));
		const echo = tools.find((f) => f.name.endsWith('__json_schema_echo'));
		const answered = (r.messages || []).some((m) => m.role === 'tool');
		res.writeHead(200, { 'Content-Type': 'text/event-stream' });
		if (focal && echo && !answered) {
			res.write(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_echo',
				type: 'function', function: { name: echo.name, arguments: '' } }] }));
			res.write(chunk({ tool_calls: [{ index: 0, function: {
				arguments: JSON.stringify({ schema: focal.parameters }) } }] }));
			res.write(chunk({}, 'tool_calls'));
		} else {
			res.write(chunk({ role: 'assistant', content: focal ? 'done' : 'no such tools' }));
			res.write(chunk({}, 'stop'));
		}
		res.write(usage);
		res.end('data: [DONE]\n\n');
	});
});
srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
