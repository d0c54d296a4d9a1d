/* settings.json: defaults written on first start, and every rule of docs/settings.md. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "sandbox.h"
#include "settings.h"
#include "xalloc.h"

static char dir[64];
static char path[128];

static void
setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/tdsettings-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/settings.json", dir);
}

static void
teardown(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(settings, .init = setup, .fini = teardown);

static void
write_file(const char *text)
{
	FILE *fp = fopen(path, "w");

	cr_assert_not_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* Loads text and expects a refusal whose message holds want. */
static void
expect_refused(const char *text, const char *want)
{
	char *err = NULL;
	struct settings *s;

	write_file(text);
	s = settings_load(path, &err);
	cr_expect_null(s, "accepted: %s", text);
	cr_assert_not_null(err);
	cr_expect(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"", err, want);
	cr_expect(strstr(err, path) != NULL, "message \"%s\" does not name the file", err);
	settings_free(s);
	free(err);
}

Test(settings, first_start_writes_private_defaults)
{
	char *err = NULL;
	struct settings *s = settings_load(path, &err);
	struct stat sb;

	cr_assert_not_null(s, "%s", err ? err : "");
	cr_assert_eq(stat(path, &sb), 0);
	cr_expect_eq(sb.st_mode & 0777, 0600);
	cr_expect_str_eq(json_get_string(settings_defaults(s), "provider"), "replay");
	cr_expect_str_eq(json_get_string(settings_provider(s, "replay"), "defaultModel"),
	    "research");
	cr_expect_str_eq(json_get_string(settings_provider(s, "ollama"), "kind"), "openai");
	cr_expect_null(settings_provider(s, "nope"));
	cr_expect_eq(settings_max_concurrent(s), 4);
	cr_expect_eq(settings_max_turns(s), 200);
	cr_expect_eq(settings_command_timeout_ms(s), 600000);
	settings_free(s);

	/* A second start reads the same file. */
	s = settings_load(path, &err);
	cr_assert_not_null(s);
	settings_free(s);
}

Test(settings, a_valid_file_is_read_as_written)
{
	char *err = NULL;
	struct settings *s;

	write_file("{\"providers\": {\"local\": {\"kind\": \"openai\", \"baseUrl\": "
	    "\"http://127.0.0.1:8080/v1\", \"apiKeyEnv\": null, \"defaultModel\": \"qwen\"}},"
	    " \"defaults\": {\"provider\": \"local\"}, \"runs\": {\"maxConcurrent\": 2}}");
	s = settings_load(path, &err);
	cr_assert_not_null(s, "%s", err ? err : "");
	cr_expect_eq(settings_max_concurrent(s), 2);
	cr_expect_eq(settings_max_turns(s), 200);
	cr_expect_str_eq(json_get_string(settings_provider(s, "local"), "baseUrl"),
	    "http://127.0.0.1:8080/v1");
	settings_free(s);

	write_file("{\"providers\": {\"local\": {\"kind\": \"openai\", \"baseUrl\": "
	    "\"http://127.0.0.1:8080/v1\", \"defaultModel\": \"qwen\", \"maxRetries\": 0,"
	    " \"maxRetryWaitMs\": 60000, \"models\": {\"qwen\": {\"contextWindow\": 32768}}}},"
	    " \"defaults\": {\"provider\": \"local\"}}");
	s = settings_load(path, &err);
	cr_assert_not_null(s, "%s", err ? err : "");
	settings_free(s);
}

Test(settings, a_provider_may_name_a_credential)
{
	char *err = NULL;
	struct settings *s;

	write_file("{\"providers\": {\"local\": {\"kind\": \"openai\", \"baseUrl\": "
	    "\"http://127.0.0.1:8080/v1\", \"apiKeyEnv\": null, \"apiKeyCredential\": "
	    "\"provider-local\", \"defaultModel\": \"qwen\"}}, \"defaults\": "
	    "{\"provider\": \"local\"}}");
	s = settings_load(path, &err);
	cr_assert_not_null(s, "%s", err ? err : "");
	cr_expect_str_eq(json_get_string(settings_provider(s, "local"), "apiKeyCredential"),
	    "provider-local");
	cr_expect_not_null(cJSON_GetObjectItem(settings_providers(s), "local"));
	settings_free(s);
}

Test(settings, broken_files_are_refused_with_the_reason)
{
	expect_refused("{not json", "not valid JSON");
	expect_refused("[]", "JSON object");
	expect_refused("{\"providers\": {}}", "at least one provider");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"gpt\", \"defaultModel\": \"m\"}}}",
	    "kind");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"openai\", \"defaultModel\": \"m\"}}}",
	    "baseUrl");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"openai\", \"baseUrl\": \"ftp://h\","
	    " \"defaultModel\": \"m\"}}}", "baseUrl");
	expect_refused("{\"providers\": {\"Bad Name\": {\"kind\": \"replay\","
	    " \"defaultModel\": \"m\"}}}", "provider name");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\"}}}", "defaultModel");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"apiKeyEnv\": \"1BAD\"}}}", "apiKeyEnv");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"extra\": 1}}}", "unknown member extra");
	/* keycred: a credential or an environment variable, not both. */
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"apiKeyEnv\": \"K\", \"apiKeyCredential\": \"provider-x\"}}}", "not both");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"apiKeyCredential\": \"\"}}}", "apiKeyCredential");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"apiKeyCredential\": 7}}}", "apiKeyCredential");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"defaults\": {\"provider\": \"y\"}}", "not in providers");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"defaults\": {\"effort\": \"max\"}}", "defaults");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"runs\": {\"maxConcurrent\": 0}}", "maxConcurrent");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"colour\": true}", "unknown member colour");
	/* The agent's retries of a model request. */
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"maxRetries\": 21}}}", "maxRetries must be 0 to 20");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"maxRetryWaitMs\": -1}}}", "maxRetryWaitMs 0 to 3600000");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"runs\": {\"maxTokensPerRun\": 10}}", "maxTokensPerRun");
	/* A model's context window. */
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"models\": {\"m\": {\"contextWindow\": 100}}}}}", "providers.x.models.m");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"models\": {\"m\": {\"window\": 8192}}}}}", "contextWindow");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\","
	    " \"models\": []}}}", "models must be an object");
}

/* runs.commandLimits: defaults when absent, 0 for none, and the ranges. */
Test(settings, command_limits)
{
	const char *base = "{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}}";
	char text[512], *err = NULL;
	const struct sandbox_limits *lim;
	struct settings *s;

	snprintf(text, sizeof text, "%s}", base);
	write_file(text);
	s = settings_load(path, &err);
	cr_assert_not_null(s, "%s", err);
	lim = settings_command_limits(s);
	cr_expect_eq(lim->memory, 2048LL << 20);
	cr_expect_eq(lim->processes, 512);
	cr_expect_eq(lim->cpu_seconds, 3600);
	cr_expect_eq(lim->tmp_size, 1024LL << 20);
	settings_free(s);

	snprintf(text, sizeof text, "%s, \"runs\": {\"commandLimits\": {\"memoryMiB\": 0, "
	    "\"processes\": 64, \"tmpMiB\": 16}}}", base);
	write_file(text);
	s = settings_load(path, &err);
	cr_assert_not_null(s, "%s", err);
	lim = settings_command_limits(s);
	cr_expect_eq(lim->memory, 0);
	cr_expect_eq(lim->processes, 64);
	cr_expect_eq(lim->cpu_seconds, 3600);
	cr_expect_eq(lim->tmp_size, 16LL << 20);
	settings_free(s);

	snprintf(text, sizeof text, "%s, \"runs\": {\"commandLimits\": {\"processes\": 2}}}", base);
	expect_refused(text, "runs.commandLimits.processes must be 0 (no limit) or an integer");
	snprintf(text, sizeof text, "%s, \"runs\": {\"commandLimits\": {\"memoryMiB\": 1.5}}}",
	    base);
	expect_refused(text, "runs.commandLimits.memoryMiB");
	snprintf(text, sizeof text, "%s, \"runs\": {\"commandLimits\": {\"swap\": 1}}}", base);
	expect_refused(text, "unknown member swap");
	snprintf(text, sizeof text, "%s, \"runs\": {\"commandLimits\": []}}", base);
	expect_refused(text, "runs.commandLimits must be an object");
}

/* pricing: a price per provider and model; cache prices default to the input price. */
Test(settings, pricing)
{
	char *err = NULL;
	struct settings *s;
	struct price p;

	write_file("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"runs\": {\"maxCostPerRun\": 2.5},"
	    " \"pricing\": {\"x\": {\"m\": {\"input\": 3, \"output\": 15, \"cacheRead\": 0.3},"
	    " \"n\": {\"input\": 1, \"output\": 2, \"cacheRead\": 0.1, \"cacheWrite\": 1.25}}}}");
	s = settings_load(path, &err);
	cr_assert_not_null(s, "%s", err);
	cr_expect(settings_max_cost_per_run(s) == 2.5);
	cr_assert(settings_price(s, "x", NULL, &p), "the default model's price");
	cr_expect(p.input == 3 && p.output == 15 && p.cache_read == 0.3 && p.cache_write == 3);
	cr_assert(settings_price(s, "x", "n", &p));
	cr_expect(p.cache_write == 1.25);
	cr_expect_not(settings_price(s, "x", "other", &p));
	cr_expect_not(settings_price(s, "y", "m", &p));
	settings_free(s);

	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"pricing\": {\"x\": {\"m\": {\"input\": 3}}}}", "pricing.x.m");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"pricing\": {\"x\": {\"m\": {\"input\": 3, \"output\": -1}}}}", "pricing.x.m");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"pricing\": {\"x\": {\"m\": {\"input\": 3, \"output\": 1, \"perRequest\": 1}}}}",
	    "pricing.x.m");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"pricing\": {\"x\": 5}}", "pricing.x");
	expect_refused("{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}},"
	    " \"runs\": {\"maxCostPerRun\": 0}}", "maxCostPerRun");
}

/* runtimes.acp: its command's path and arguments; no other runtime takes arguments. */
Test(settings, the_acp_runtime_takes_arguments)
{
	const char *p = "{\"providers\": {\"x\": {\"kind\": \"replay\", \"defaultModel\": \"m\"}}, ";
	char text[4096], *err = NULL, big[5000], *long_arg;
	struct settings *s;
	const cJSON *args;

	snprintf(text, sizeof text, "%s\"runtimes\": {\"acp\": {\"path\": \"/usr/bin/gemini\", "
	    "\"args\": [\"--experimental-acp\"]}}}", p);
	write_file(text);
	s = settings_load(path, &err);
	cr_assert_not_null(s, "%s", err ? err : "");
	cr_expect_str_eq(settings_runtime_path(s, "acp"), "/usr/bin/gemini");
	args = settings_runtime_args(s, "acp");
	cr_assert(cJSON_IsArray(args));
	cr_expect_str_eq(cJSON_GetArrayItem(args, 0)->valuestring, "--experimental-acp");
	cr_expect_null(settings_runtime_args(s, "codex"));
	settings_free(s);

	snprintf(text, sizeof text, "%s\"runtimes\": {\"codex\": {\"path\": \"/usr/bin/codex\", "
	    "\"args\": [\"exec\"]}}}", p);
	expect_refused(text, "only runtimes.acp takes arguments");
	snprintf(text, sizeof text, "%s\"runtimes\": {\"acp\": {\"path\": \"/a\", \"args\": \"acp\"}}}", p);
	expect_refused(text, "runtimes.acp.args must be an array");
	snprintf(text, sizeof text, "%s\"runtimes\": {\"acp\": {\"path\": \"/a\", \"args\": [1]}}}", p);
	expect_refused(text, "runtimes.acp.args must hold strings");
	snprintf(text, sizeof text, "%s\"runtimes\": {\"acp\": {\"path\": \"acp\"}}}", p);
	expect_refused(text, "runtimes.acp.path must be an absolute path");
	snprintf(text, sizeof text, "%s\"runtimes\": {\"acp\": {\"path\": \"/a\", \"args\": [%s]}}}", p,
	    "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
	    "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
	    "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
	    "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"");
	expect_refused(text, "at most 64 strings");
	memset(big, 'x', 4097);
	big[4097] = '\0';
	long_arg = xasprintf("%s\"runtimes\": {\"acp\": {\"path\": \"/a\", \"args\": [\"%s\"]}}}",
	    p, big);
	expect_refused(long_arg, "at most 4096 bytes");
	free(long_arg);
	snprintf(text, sizeof text, "%s\"runtimes\": {\"gemini\": {\"path\": \"/a\"}}}", p);
	expect_refused(text, "unknown member gemini (claude-code, codex or acp)");
}
