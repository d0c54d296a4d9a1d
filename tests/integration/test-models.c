/*
 * The models of a provider through a real taskdeckd against fake providers
 * that answer as OpenAI-compatible servers (vLLM), Ollama and Anthropic do:
 * GET /api/v1/providers/{name}/models, the completion of --model and doctor.
 * The API key goes to the provider and nowhere else.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake-provider.h"
#include "harness.h"
#include "taskdeck.h"

#define KEY "sk-models-secret-4242"

static void
setup(void)
{
	setenv("TD_MODELS_KEY", KEY, 1);
	svc_start(&svc);
	svc_export_env(&svc);
}

static void
teardown(void)
{
	svc_destroy(&svc);
	unsetenv("TD_MODELS_KEY");
}

TestSuite(models, .init = setup, .fini = teardown, .timeout = 120);

/* settings.json with one provider "local" of kind at base, then the service restarted. */
static void
use_provider(const char *kind, const char *base)
{
	char settings[1024];

	snprintf(settings, sizeof settings, "{\"providers\": {\"local\": {\"kind\": \"%s\", "
	    "\"baseUrl\": \"%s\", \"apiKeyEnv\": \"TD_MODELS_KEY\", \"defaultModel\": \"tiny-2\", "
	    "\"models\": {\"tiny-3\": {\"contextWindow\": 8192}}}}, \"defaults\": "
	    "{\"provider\": \"local\"}}", kind, base);
	svc_stop(&svc);
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
}

/* The model of list with that id, or NULL. */
static const cJSON *
model(const cJSON *list, const char *id)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, cJSON_GetObjectItem(list, "models"))
		if (strcmp(json_str(m, "id"), id) == 0)
			return m;
	return NULL;
}

static void
expect_no_key(const char *where, const char *text)
{
	cr_expect(text == NULL || strstr(text, KEY) == NULL, "the key is in %s", where);
}

/* vLLM's /v1/models: the ids, max_model_len as the window, the settings' models added. */
Test(models, an_openai_compatible_server_lists_its_models)
{
	struct fake_provider *fp = fake_provider_start(NULL, 0);
	struct http_resp r;
	const cJSON *m;
	char *auth, *log, path[512];

	cr_assert_not_null(fp);
	fake_provider_info(fp, "/v1/models", "{\"object\":\"list\",\"data\":[{\"id\":\"tiny-1\","
	    "\"object\":\"model\",\"created\":1730000000,\"owned_by\":\"vllm\",\"root\":"
	    "\"tiny-1\",\"parent\":null,\"max_model_len\":32768,\"permission\":[]},{\"id\":"
	    "\"tiny-2\",\"object\":\"model\",\"created\":1730000000,\"owned_by\":\"vllm\"},"
	    "{\"id\":\"bad\\u0007id\",\"object\":\"model\"}]}");
	use_provider("openai", fake_provider_url(fp, "/v1"));
	r = http_req(&svc, "GET", "/api/v1/providers/local/models", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(json_str(r.json, "provider"), "local");
	cr_expect_str_eq(json_str(r.json, "kind"), "openai");
	m = model(r.json, "tiny-1");
	cr_assert_not_null(m, "%s", r.body);
	cr_expect_eq(json_num(m, "contextWindow"), 32768);
	m = model(r.json, "tiny-2");
	cr_assert_not_null(m, "%s", r.body);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(m, "default")), "%s", r.body);
	m = model(r.json, "tiny-3");
	cr_assert_not_null(m, "the model settings.json names is missing: %s", r.body);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(m, "configured")));
	cr_expect_eq(json_num(m, "contextWindow"), 8192);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "models")), 3,
	    "a model id with a control character is left out: %s", r.body);
	auth = fake_provider_info_header(fp, "Authorization");
	cr_expect(auth != NULL && strcmp(auth, "Bearer " KEY) == 0, "%s", auth ? auth : "none");
	free(auth);
	expect_no_key("the answer", r.body);
	http_resp_free(&r);

	/* "default" is the default provider; the list is kept a while (one request). */
	r = http_req(&svc, "GET", "/api/v1/providers/default/models", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(json_str(r.json, "provider"), "local");
	cr_expect_not_null(model(r.json, "tiny-1"));
	http_resp_free(&r);
	cr_expect_eq(fake_provider_info_hits(fp, "/v1/models"), 1);
	snprintf(path, sizeof path, "%s/taskdeckd.log", svc.home);
	log = harness_slurp(path, NULL);
	expect_no_key("the service log", log);
	free(log);
	fake_provider_stop(fp);
}

/* Ollama without an OpenAI model list: GET /api/tags. */
Test(models, ollama_lists_its_tags)
{
	struct fake_provider *fp = fake_provider_start(NULL, 0);
	struct http_resp r;

	cr_assert_not_null(fp);
	fake_provider_info(fp, "/api/tags", "{\"models\":[{\"name\":\"llama3.1:latest\","
	    "\"model\":\"llama3.1:latest\",\"modified_at\":\"2026-10-01T10:00:00Z\",\"size\":"
	    "4920753328,\"digest\":\"46e0c10c039e\",\"details\":{\"format\":\"gguf\",\"family\":"
	    "\"llama\",\"parameter_size\":\"8.0B\",\"quantization_level\":\"Q4_K_M\"}},"
	    "{\"name\":\"qwen3:8b\",\"model\":\"qwen3:8b\"}]}");
	use_provider("openai", fake_provider_url(fp, "/v1"));
	r = http_req(&svc, "GET", "/api/v1/providers/local/models", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_not_null(model(r.json, "llama3.1:latest"), "%s", r.body);
	cr_expect_not_null(model(r.json, "qwen3:8b"), "%s", r.body);
	cr_expect(strstr(json_str(r.json, "source"), "/api/tags") != NULL, "%s", r.body);
	http_resp_free(&r);
	fake_provider_stop(fp);
}

/* Anthropic's models API, with its version header and the key as x-api-key. */
Test(models, anthropic_lists_its_models)
{
	struct fake_provider *fp = fake_provider_start(NULL, 0);
	struct http_resp r;
	const cJSON *m;
	char *key, *version;

	cr_assert_not_null(fp);
	fake_provider_info(fp, "/v1/models", "{\"data\":[{\"type\":\"model\",\"id\":"
	    "\"claude-sonnet-4-5\",\"display_name\":\"Claude Sonnet 4.5\",\"created_at\":"
	    "\"2025-09-29T00:00:00Z\",\"max_input_tokens\":200000,\"max_tokens\":64000}],"
	    "\"has_more\":false,\"first_id\":\"claude-sonnet-4-5\",\"last_id\":"
	    "\"claude-sonnet-4-5\"}");
	use_provider("anthropic", fake_provider_url(fp, ""));
	r = http_req(&svc, "GET", "/api/v1/providers/local/models", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	m = model(r.json, "claude-sonnet-4-5");
	cr_assert_not_null(m, "%s", r.body);
	cr_expect_str_eq(json_str(m, "displayName"), "Claude Sonnet 4.5");
	cr_expect_eq(json_num(m, "contextWindow"), 200000);
	key = fake_provider_info_header(fp, "x-api-key");
	version = fake_provider_info_header(fp, "anthropic-version");
	cr_expect(key != NULL && strcmp(key, KEY) == 0);
	cr_expect(version != NULL && strcmp(version, "2023-06-01") == 0);
	free(key);
	free(version);
	expect_no_key("the answer", r.body);
	http_resp_free(&r);
	fake_provider_stop(fp);
}

/* No such provider: 404; a provider that does not answer: 502 provider_unavailable. */
Test(models, errors_say_what_is_wrong)
{
	struct fake_provider *fp = fake_provider_start(NULL, 0);
	struct http_resp r;
	char base[128];

	cr_assert_not_null(fp);
	snprintf(base, sizeof base, "%s", fake_provider_url(fp, "/v1"));
	fake_provider_stop(fp);		/* nothing listens there any more */
	use_provider("openai", base);
	r = http_req(&svc, "GET", "/api/v1/providers/nosuch/models", NULL, NULL, true);
	cr_expect_eq(r.status, 404, "%s", r.body);
	cr_expect_str_eq(http_error_code(&r), "not_found");
	http_resp_free(&r);
	r = http_req(&svc, "GET", "/api/v1/providers/local/models", NULL, NULL, true);
	cr_expect_eq(r.status, 502, "%s", r.body);
	cr_expect_str_eq(http_error_code(&r), "provider_unavailable");
	cr_expect(strstr(r.body, "could not be reached") != NULL, "%s", r.body);
	expect_no_key("the error", r.body);
	http_resp_free(&r);
}

/* What --model takes: the completion asks the service, and doctor says it. */
Test(models, completion_and_doctor_list_what_model_takes)
{
	struct fake_provider *fp = fake_provider_start(NULL, 0);
	struct http_resp r;
	const cJSON *c, *found = NULL;
	char *out = NULL;
	int rc;

	cr_assert_not_null(fp);
	fake_provider_info(fp, "/v1/models", "{\"object\":\"list\",\"data\":[{\"id\":\"tiny-1\","
	    "\"object\":\"model\"},{\"id\":\"tiny-2\",\"object\":\"model\"},{\"id\":\"other\","
	    "\"object\":\"model\"}]}");
	use_provider("openai", fake_provider_url(fp, "/v1"));
	/* The first listing fills the service's cache; completion then answers at once. */
	r = http_req(&svc, "GET", "/api/v1/providers/local/models", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	rc = run_capture(&svc, &out, "'%s' __complete run --provider local --model ti",
	    harness_bin("taskdeck"));
	cr_expect_eq(rc, 0);
	cr_expect(out != NULL && strstr(out, "tiny-1") != NULL && strstr(out, "tiny-2") != NULL &&
	    strstr(out, "other") == NULL, "%s", out ? out : "");
	free(out);
	out = NULL;
	rc = run_capture(&svc, &out, "'%s' __complete run --model=", harness_bin("taskdeck"));
	cr_expect(out != NULL && strstr(out, "--model=other") != NULL, "%s", out ? out : "");
	free(out);

	r = http_req(&svc, "GET", "/api/v1/doctor", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(r.json, "checks"))
		if (strcmp(json_str(c, "id"), "provider-models") == 0)
			found = c;
	cr_assert_not_null(found, "%s", r.body);
	cr_expect(strstr(json_str(found, "message"), "--model takes: tiny-1, tiny-2 (default), "
	    "other") != NULL, "%s", json_str(found, "message"));
	expect_no_key("doctor", r.body);
	http_resp_free(&r);
	fake_provider_stop(fp);
}
