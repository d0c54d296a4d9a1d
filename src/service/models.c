/* The models of a provider, asked of the provider (models.h). */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <sodium.h>

#include "buf.h"
#include "credentials.h"
#include "json.h"
#include "log.h"
#include "timeutil.h"
#include "models.h"
#include "service.h"
#include "settings.h"
#include "xalloc.h"

#define MODELS_BODY_MAX (4 * 1024 * 1024)
#define MODELS_MAX 2000			/* models in one answer */
#define MODELS_ID_MAX 200		/* bytes of one model id */

#define MODELS_CACHE_MS 60000		/* a provider's list is asked again after this */
#define MODELS_CACHED 8			/* providers whose list is kept */

/* One listing at a time: the HTTP threads are few, a slow provider holds one. */
static pthread_mutex_t models_busy = PTHREAD_MUTEX_INITIALIZER;

/* The last lists, so that completion (which waits little) finds them at once. */
static pthread_mutex_t models_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char *name;
	cJSON *list;
	int64_t at;
} models_cache[MODELS_CACHED];

/* A copy of the fresh list of provider name, or NULL. */
static cJSON *
models_cached(const char *name)
{
	cJSON *out = NULL;

	pthread_mutex_lock(&models_cache_mu);
	for (size_t i = 0; i < MODELS_CACHED; i++)
		if (models_cache[i].name != NULL && strcmp(models_cache[i].name, name) == 0 &&
		    clock_mono_ms() - models_cache[i].at < MODELS_CACHE_MS)
			out = cJSON_Duplicate(models_cache[i].list, true);
	pthread_mutex_unlock(&models_cache_mu);
	return out;
}

/* Keeps a copy of list for name, in place of its old one or the oldest. */
static void
models_keep(const char *name, const cJSON *list)
{
	size_t at = 0;

	pthread_mutex_lock(&models_cache_mu);
	for (size_t i = 0; i < MODELS_CACHED; i++) {
		if (models_cache[i].name != NULL && strcmp(models_cache[i].name, name) == 0) {
			at = i;
			break;
		}
		if (models_cache[i].at < models_cache[at].at)
			at = i;
	}
	free(models_cache[at].name);
	cJSON_Delete(models_cache[at].list);
	models_cache[at].name = xstrdup(name);
	models_cache[at].list = cJSON_Duplicate(list, true);
	models_cache[at].at = clock_mono_ms();
	pthread_mutex_unlock(&models_cache_mu);
}

static size_t
models_on_body(char *data, size_t size, size_t n, void *ud)
{
	return buf_append(ud, data, size * n) ? size * n : 0;
}

/* GET url with headers; the HTTP status (0: no answer) and the JSON body (or NULL). */
static long
models_get(const char *url, const char *const *headers, cJSON **doc)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hl = NULL;
	struct buf body;
	long status = 0;

	*doc = NULL;
	if (h == NULL)
		return 0;
	buf_init(&body, MODELS_BODY_MAX);
	for (size_t i = 0; headers[i] != NULL; i++)
		hl = curl_slist_append(hl, headers[i]);
	hl = curl_slist_append(hl, "Accept: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)MODELS_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, models_on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status == 200 && body.len > 0)
		*doc = json_parse(body.data, body.len);
	if (*doc != NULL && !cJSON_IsObject(*doc)) {
		cJSON_Delete(*doc);
		*doc = NULL;
	}
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	buf_free(&body);
	return status;
}

/* Whether id is a model id to show: UTF-8 text without control characters, bounded. */
static bool
models_id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > MODELS_ID_MAX || !json_utf8_valid(id, n))
		return false;
	for (const char *c = id; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/* The entry of models with that id, or a new one (NULL when the list is full). */
static cJSON *
models_entry(cJSON *models, const char *id)
{
	cJSON *m;

	cJSON_ArrayForEach(m, models)
		if (strcmp(json_get_string(m, "id"), id) == 0)
			return m;
	if (cJSON_GetArraySize(models) >= MODELS_MAX)
		return NULL;
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "id", id);
	cJSON_AddItemToArray(models, m);
	return m;
}

/* A window in a provider's answer: a whole number of tokens from 1,024 to 10,000,000. */
static void
models_window(cJSON *m, const cJSON *v)
{
	if (cJSON_IsNumber(v) && v->valuedouble >= 1024 && v->valuedouble <= 1e7 &&
	    cJSON_GetObjectItemCaseSensitive(m, "contextWindow") == NULL)
		cJSON_AddNumberToObject(m, "contextWindow", (double)(long)v->valuedouble);
}

/* Adds the models of a list (arr of objects, the id under key) to models. */
static void
models_take(cJSON *models, const cJSON *arr, const char *key)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr) {
		const char *id = json_get_string(e, key), *shown;
		cJSON *m;

		if (!models_id_ok(id) || (m = models_entry(models, id)) == NULL)
			continue;
		shown = json_get_string(e, "display_name");
		if (models_id_ok(shown) && cJSON_GetObjectItemCaseSensitive(m, "displayName") == NULL)
			cJSON_AddStringToObject(m, "displayName", shown);
		models_window(m, cJSON_GetObjectItemCaseSensitive(e, "max_model_len"));
		models_window(m, cJSON_GetObjectItemCaseSensitive(e, "max_input_tokens"));
	}
}

/* base without its trailing slashes, then path. */
static char *
models_url(const char *base, size_t n, const char *path)
{
	while (n > 0 && base[n - 1] == '/')
		n--;
	return xasprintf("%.*s%s", (int)n, base, path);
}

/* The OpenAI kind: GET {base}/models; Ollama's GET {root}/api/tags when that fails. */
static long
models_openai(const char *base, const char *key, cJSON *models, const char **source)
{
	char *auth = key ? xasprintf("Authorization: Bearer %s", key) : NULL;
	const char *headers[] = { auth, NULL };
	char *url = models_url(base, strlen(base), "/models");
	size_t n = strlen(base);
	cJSON *doc;
	long status = models_get(url, headers, &doc);

	free(url);
	if (auth != NULL) {
		sodium_memzero(auth, strlen(auth));
		free(auth);
	}
	if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "data"))) {
		models_take(models, cJSON_GetObjectItemCaseSensitive(doc, "data"), "id");
		*source = "GET {baseUrl}/models";
		cJSON_Delete(doc);
		return 200;
	}
	cJSON_Delete(doc);
	while (n > 0 && base[n - 1] == '/')
		n--;
	if (n >= 3 && strncmp(base + n - 3, "/v1", 3) == 0)
		n -= 3;
	url = models_url(base, n, "/api/tags");
	{
		const char *none[] = { NULL };
		long tags = models_get(url, none, &doc);

		if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "models"))) {
			models_take(models, cJSON_GetObjectItemCaseSensitive(doc, "models"), "name");
			*source = "GET /api/tags (Ollama)";
			status = tags;
		} else if (status == 200) {
			status = -1;	/* an answer, but no list */
		}
	}
	cJSON_Delete(doc);
	free(url);
	return status;
}

/* Anthropic's models API: GET {base}/v1/models, a page of up to 1,000. */
static long
models_anthropic(const char *base, const char *key, cJSON *models, const char **source)
{
	char *auth = key ? xasprintf("x-api-key: %s", key) : NULL;
	const char *headers[] = { "anthropic-version: 2023-06-01", auth, NULL };
	char *url = models_url(base, strlen(base), "/v1/models?limit=1000");
	cJSON *doc;
	long status = models_get(url, headers, &doc);

	free(url);
	if (auth != NULL) {
		sodium_memzero(auth, strlen(auth));
		free(auth);
	}
	if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "data"))) {
		models_take(models, cJSON_GetObjectItemCaseSensitive(doc, "data"), "id");
		*source = "GET {baseUrl}/v1/models (Anthropic)";
		status = 200;
	} else if (status == 200) {
		status = -1;
	}
	cJSON_Delete(doc);
	return status;
}

static int
models_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The replay kind: the transcripts of dir (NAME.json plays model NAME), sorted. */
static void
models_replay(const char *dir, cJSON *models, const char **source)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;

	while (d != NULL && n < MODELS_MAX && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);

		if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) {
			names = xrealloc(names, (n + 1) * sizeof *names);
			names[n++] = xstrndup(e->d_name, len - 5);
		}
	}
	if (d != NULL)
		closedir(d);
	qsort(names, n, sizeof *names, models_cmp);
	for (size_t i = 0; i < n; i++) {
		if (models_id_ok(names[i]))
			models_entry(models, names[i]);
		free(names[i]);
	}
	free(names);
	*source = "the replay transcripts";
}

/* Wipes the API key of a provider block before it is freed. */
static void
models_wipe(cJSON *block)
{
	cJSON *k = cJSON_GetObjectItemCaseSensitive(block, "apiKey");

	if (cJSON_IsString(k) && k->valuestring != NULL)
		sodium_memzero(k->valuestring, strlen(k->valuestring));
}

/* The models settings.json names for provider p: its defaultModel and models.<id>. */
static void
models_configured(cJSON *models, const cJSON *p)
{
	const char *def = json_get_string(p, "defaultModel");
	const cJSON *m;
	cJSON *e;

	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(p, "models")) {
		if (!models_id_ok(m->string) || (e = models_entry(models, m->string)) == NULL)
			continue;
		cJSON_AddTrueToObject(e, "configured");
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(m, "contextWindow"))) {
			cJSON_DeleteItemFromObjectCaseSensitive(e, "contextWindow");
			models_window(e, cJSON_GetObjectItemCaseSensitive(m, "contextWindow"));
		}
	}
	if (models_id_ok(def) && (e = models_entry(models, def)) != NULL)
		cJSON_AddTrueToObject(e, "default");
}

cJSON *
models_list(struct service *svc, const char *name, struct problem *p)
{
	const cJSON *prov;
	cJSON *block, *out, *models, *key;
	const char *kind, *base, *source = "settings.json";
	char *why = NULL;
	long status = 200;

	/* "default": the default provider, unless a provider has that name. */
	if (strcmp(name, "default") == 0 && settings_provider(svc->settings, name) == NULL)
		name = json_get_string(settings_defaults(svc->settings), "provider") ?
		    json_get_string(settings_defaults(svc->settings), "provider") : "replay";
	prov = settings_provider(svc->settings, name);
	if (prov == NULL) {
		problem_set(p, TD_NOT_FOUND, "name", "No provider %.100s in settings.json.", name);
		return NULL;
	}
	if ((out = models_cached(name)) != NULL)
		return out;
	if ((block = credential_provider_block(svc, name, &why)) == NULL) {
		problem_set(p, TD_INVALID_CONFIGURATION, "apiKeyCredential", "%s",
		    why ? why : "The provider cannot be read.");
		free(why);
		return NULL;
	}
	if (pthread_mutex_trylock(&models_busy) != 0) {
		models_wipe(block);
		cJSON_Delete(block);
		problem_set(p, TD_UNAVAILABLE, NULL, "Another listing of models is under way; "
		    "retry in a moment.");
		return NULL;
	}
	kind = json_get_string(block, "kind");
	base = json_get_string(block, "baseUrl");
	key = cJSON_GetObjectItemCaseSensitive(block, "apiKey");
	models = cJSON_CreateArray();
	if (kind != NULL && base != NULL && strcmp(kind, "openai") == 0)
		status = models_openai(base, cJSON_IsString(key) ? key->valuestring : NULL, models,
		    &source);
	else if (kind != NULL && base != NULL && strcmp(kind, "anthropic") == 0)
		status = models_anthropic(base, cJSON_IsString(key) ? key->valuestring : NULL,
		    models, &source);
	else if (kind == NULL || strcmp(kind, "replay") == 0)
		models_replay(svc->replay_dir, models, &source);
	pthread_mutex_unlock(&models_busy);
	if (status != 200) {
		problem_set(p, TD_PROVIDER_UNAVAILABLE, NULL, status > 0 ? "The provider %.100s "
		    "(%.300s) answered the list of its models with HTTP %ld." : status < 0 ?
		    "The provider %.100s (%.300s) answered the list of its models with no list." :
		    "The provider %.100s (%.300s) could not be reached.", name, base, status);
		models_wipe(block);
		cJSON_Delete(block);
		cJSON_Delete(models);
		return NULL;
	}
	models_configured(models, prov);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "provider", name);
	cJSON_AddStringToObject(out, "kind", kind ? kind : "replay");
	cJSON_AddStringToObject(out, "source", source);
	cJSON_AddItemToObject(out, "models", models);
	log_debug("provider %s lists %d models (%s)", name, cJSON_GetArraySize(models), source);
	models_keep(name, out);
	models_wipe(block);
	cJSON_Delete(block);
	return out;
}
