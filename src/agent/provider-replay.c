/*
 * The replay provider: plays replayDir/<model>.json, a recorded list of model
 * turns, with its timing (docs/agent.md describes the format).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "json.h"
#include "provider.h"
#include "tools.h"
#include "xalloc.h"

#define REPLAY_MAX_BYTES (4 * 1024 * 1024)
#define REPLAY_MAX_TURNS 1000
#define REPLAY_MAX_DELAY 600000
#define REPLAY_ID_MAX 64

#ifndef TD_DATADIR
#define TD_DATADIR "/usr/local/share/taskdeck"
#endif

struct replay {
	cJSON *doc;
	const cJSON *turns;
	int count;
	int next;
	int played;		/* turns played: call ids stay unique when a turn repeats */
	int branch;		/* the last turn played if it has onDecision, else -1 */
	unsigned decisions_at;	/* plan decisions when that turn was played */
	char *name;
};

/* The codes a recorded failure may carry. */
static const char *const replay_fail_codes[] = {
	"replay_failed", "provider_error", "provider_unreachable",
	"invalid_provider_response", NULL,
};

static const char *const replay_turn_keys[] = {
	"delayMs", "text", "toolCalls", "usage", "fail", "comment", "id", "onDecision",
	"afterReview", NULL,
};

/* The decisions a turn may branch on; a rejected plan ends the run. */
static const char *const replay_branches[] = { "approve", "revise", NULL };

static bool
replay_name_ok(const char *name)
{
	if (name[0] == '\0' || name[0] == '.' || strlen(name) > 200)
		return false;
	for (const char *c = name; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-'))
			return false;
	}
	return true;
}

static bool
replay_delay_ok(const cJSON *obj)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(obj, "delayMs");

	return d == NULL || (cJSON_IsNumber(d) && d->valuedouble >= 0 &&
	    d->valuedouble <= REPLAY_MAX_DELAY);
}

static long
replay_delay(const cJSON *obj)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(obj, "delayMs");

	return cJSON_IsNumber(d) ? (long)d->valuedouble : 0;
}

static long
replay_number(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

static char *
replay_check_text(const cJSON *text, int t)
{
	int i = 0;
	const cJSON *item;

	if (text == NULL || cJSON_IsString(text))
		return NULL;
	if (!cJSON_IsArray(text))
		return xasprintf("turns[%d].text must be a string or an array", t);
	cJSON_ArrayForEach(item, text) {
		if (!cJSON_IsString(item) &&
		    !(cJSON_IsObject(item) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(item, "delta"))))
			return xasprintf("turns[%d].text[%d] must be a string or {\"delta\": \"...\"}", t, i);
		if (cJSON_IsObject(item) && !replay_delay_ok(item))
			return xasprintf("turns[%d].text[%d].delayMs must be 0 to %d", t, i, REPLAY_MAX_DELAY);
		i++;
	}
	return NULL;
}

static char *
replay_check_calls(const cJSON *calls, int t)
{
	int i = 0;
	const cJSON *c;

	if (calls == NULL)
		return NULL;
	if (!cJSON_IsArray(calls) || cJSON_GetArraySize(calls) > TURN_MAX_CALLS)
		return xasprintf("turns[%d].toolCalls must be an array of at most %d calls", t,
		    TURN_MAX_CALLS);
	cJSON_ArrayForEach(c, calls) {
		if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "name")))
			return xasprintf("turns[%d].toolCalls[%d].name must be a string", t, i);
		if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(c, "arguments")))
			return xasprintf("turns[%d].toolCalls[%d].arguments must be an object", t, i);
		i++;
	}
	return NULL;
}

/*
 * last: whether the run may end with this turn: the transcript's last, or one
 * followed by an afterReview turn (played when a reviewer requests changes).
 */
static char *
replay_check_turn(const cJSON *turn, int t, bool last)
{
	const cJSON *fail = cJSON_GetObjectItemCaseSensitive(turn, "fail");
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(turn, "toolCalls");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(turn, "usage");
	const char *bad;
	char *why;

	if (!cJSON_IsObject(turn))
		return xasprintf("turns[%d] must be an object", t);
	if (!json_only_keys(turn, replay_turn_keys, &bad))
		return xasprintf("turns[%d] has an unknown member \"%s\"", t, bad);
	if (!replay_delay_ok(turn))
		return xasprintf("turns[%d].delayMs must be 0 to %d", t, REPLAY_MAX_DELAY);
	if ((why = replay_check_text(cJSON_GetObjectItemCaseSensitive(turn, "text"), t)) ||
	    (why = replay_check_calls(calls, t)))
		return why;
	if (usage != NULL && (!cJSON_IsObject(usage) ||
	    !json_check_int(usage, "inputTokens", 0, 1e12) ||
	    !json_check_int(usage, "outputTokens", 0, 1e12)))
		return xasprintf("turns[%d].usage needs integer inputTokens and outputTokens", t);
	if (fail != NULL) {
		if (!cJSON_IsObject(fail) || !json_check_string(fail, "message", true, false, 1, 4096) ||
		    !json_check_enum(fail, "code", false, replay_fail_codes))
			return xasprintf("turns[%d].fail needs a message and a known code", t);
		if (!last)
			return xasprintf("turns[%d] fails, so it must be the last turn", t);
		return NULL;
	}
	if (last && cJSON_GetArraySize(calls) > 0)
		return xasprintf("the last turn (turns[%d]) must answer without tool calls", t);
	if (!last && cJSON_GetArraySize(calls) == 0)
		return xasprintf("turns[%d] has no tool calls, so the run would end there", t);
	return NULL;
}

/* The index of the turn whose id is id, or -1. */
static int
replay_find_id(const cJSON *turns, const char *id, int before)
{
	const cJSON *t;
	int i = 0;

	cJSON_ArrayForEach(t, turns) {
		const char *tid = json_get_string(t, "id");

		if (i == before)
			break;
		if (tid != NULL && id != NULL && strcmp(tid, id) == 0)
			return i;
		i++;
	}
	return -1;
}

static bool
replay_has_call(const cJSON *turn, const char *name)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(turn, "toolCalls")) {
		const char *n = json_get_string(c, "name");

		if (n != NULL && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

/* Turn ids are unique; onDecision names existing ids after a propose_plan call. */
static char *
replay_check_branches(const cJSON *turns)
{
	const cJSON *t, *b;
	const char *bad;
	int i = 0, n = cJSON_GetArraySize(turns);

	cJSON_ArrayForEach(t, turns) {
		const cJSON *on = cJSON_GetObjectItemCaseSensitive(t, "onDecision");

		if (!json_check_string(t, "id", false, false, 1, REPLAY_ID_MAX))
			return xasprintf("turns[%d].id must be a string of 1 to %d bytes", i,
			    REPLAY_ID_MAX);
		if (json_get_string(t, "id") != NULL &&
		    replay_find_id(turns, json_get_string(t, "id"), i) >= 0)
			return xasprintf("turns[%d].id \"%s\" is used twice", i,
			    json_get_string(t, "id"));
		if (on != NULL && (!cJSON_IsObject(on) ||
		    !json_only_keys(on, replay_branches, &bad)))
			return xasprintf("turns[%d].onDecision must be an object with approve "
			    "and/or revise", i);
		if (on != NULL && !replay_has_call(t, "propose_plan"))
			return xasprintf("turns[%d].onDecision needs a propose_plan call in the turn", i);
		cJSON_ArrayForEach(b, on) {
			if (!cJSON_IsString(b) || replay_find_id(turns, b->valuestring, n) < 0)
				return xasprintf("turns[%d].onDecision.%s must name the id of a turn",
				    i, b->string);
		}
		i++;
	}
	return NULL;
}

static char *
replay_check(const cJSON *doc, const cJSON **turns)
{
	int i = 0, n;
	const cJSON *t;

	*turns = cJSON_GetObjectItemCaseSensitive(doc, "turns");
	if (!cJSON_IsObject(doc) || !cJSON_IsArray(*turns))
		return xstrdup("the transcript must be an object with a \"turns\" array");
	n = cJSON_GetArraySize(*turns);
	if (n < 1 || n > REPLAY_MAX_TURNS)
		return xasprintf("the transcript needs 1 to %d turns", REPLAY_MAX_TURNS);
	cJSON_ArrayForEach(t, *turns) {
		bool next_after_review = t->next != NULL &&
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t->next, "afterReview"));
		char *why = replay_check_turn(t, i, i == n - 1 ||
		    (next_after_review && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t,
		    "toolCalls")) == 0));

		if (why)
			return why;
		i++;
	}
	return replay_check_branches(*turns);
}

/* The file's bytes (at most REPLAY_MAX_BYTES), or NULL with errno set. */
static char *
replay_slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *data;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > REPLAY_MAX_BYTES) {
		close(fd);
		errno = EFBIG;
		return NULL;
	}
	data = xmalloc((size_t)st.st_size + 1);
	*len = agent_read_full(fd, data, (size_t)st.st_size);
	close(fd);
	return data;
}

static int
replay_open(struct provider *p, struct agent_error *err)
{
	const struct agent_config *cfg = p->cfg;
	const char *dir = cfg->replay_dir ? cfg->replay_dir : TD_DATADIR "/replay";
	struct replay *r;
	char *path, *data, *why;
	size_t len = 0;
	cJSON *doc;
	const cJSON *turns;

	if (!replay_name_ok(cfg->model)) {
		agent_error_set(err, "replay_not_found", "\"%.200s\" is not a transcript name",
		    cfg->model);
		return AGENT_FAILED;
	}
	path = xasprintf("%s/%s.json", dir, cfg->model);
	data = replay_slurp(path, &len);
	if (data == NULL) {
		if (errno == ENOENT)
			agent_error_set(err, "replay_not_found",
			    "no replay transcript named \"%s\" (%s)", cfg->model, path);
		else
			agent_error_set(err, errno == EFBIG ? "invalid_provider_response" :
			    "replay_not_found", "cannot read the replay transcript %s: %s", path,
			    errno == EFBIG ? "not a regular file of at most 4 MiB" : strerror(errno));
		free(path);
		return AGENT_FAILED;
	}
	doc = json_parse(data, len);
	free(data);
	if (doc == NULL) {
		agent_error_set(err, "invalid_provider_response",
		    "the replay transcript %s is not valid JSON", path);
		free(path);
		return AGENT_FAILED;
	}
	if ((why = replay_check(doc, &turns)) != NULL) {
		agent_error_set(err, "invalid_provider_response",
		    "the replay transcript %s is invalid: %s", path, why);
		free(why);
		free(path);
		cJSON_Delete(doc);
		return AGENT_FAILED;
	}
	free(path);
	r = xcalloc(1, sizeof *r);
	r->doc = doc;
	r->turns = turns;
	r->count = cJSON_GetArraySize(turns);
	r->branch = -1;
	r->name = xstrdup(cfg->model);
	p->state = r;
	return AGENT_OK;
}

/* s with {{feedback}} and {{stepN}} replaced from the run's plan. */
static char *
replay_expand(const char *s, const struct plan_state *plan)
{
	struct buf b;

	buf_init(&b, 0);
	while (*s) {
		const char *open = strstr(s, "{{");
		const char *close = open ? strstr(open, "}}") : NULL;
		char *end;
		unsigned long n;

		if (close == NULL) {
			buf_appends(&b, s);
			break;
		}
		buf_append(&b, s, (size_t)(open - s));
		if (strncmp(open, "{{feedback}}", 12) == 0) {
			if (plan != NULL && plan->feedback != NULL)
				buf_appends(&b, plan->feedback);
		} else if (strncmp(open, "{{step", 6) == 0 && open[6] >= '1' && open[6] <= '9' &&
		    (n = strtoul(open + 6, &end, 10)) > 0 && end == close) {
			if (plan != NULL && n <= plan->nsteps)
				buf_appends(&b, plan->steps[n - 1].id);
		} else
			buf_append(&b, open, (size_t)(close + 2 - open));
		s = close + 2;
	}
	return b.data ? buf_steal(&b) : xstrdup("");
}

/* Expands every string inside item, in place. */
static void
replay_expand_json(cJSON *item, const struct plan_state *plan)
{
	cJSON *c;

	if (cJSON_IsString(item) && strstr(item->valuestring, "{{") != NULL) {
		char *v = replay_expand(item->valuestring, plan);

		cJSON_SetValuestring(item, v);
		free(v);
	}
	cJSON_ArrayForEach(c, item)
		replay_expand_json(c, plan);
}

static void
replay_delta(struct provider *p, const char *delta, const struct provider_sink *sink,
    struct turn *out)
{
	char *text = replay_expand(delta, p->plan);

	buf_appends(&out->text, text);
	sink->text(sink->ud, text, strlen(text));
	free(text);
}

static int
replay_text(struct provider *p, const cJSON *text, const struct provider_sink *sink,
    struct turn *out)
{
	const cJSON *item;

	if (cJSON_IsString(text)) {
		replay_delta(p, text->valuestring, sink, out);
		return AGENT_OK;
	}
	cJSON_ArrayForEach(item, text) {
		const char *delta = cJSON_IsString(item) ? item->valuestring :
		    json_get_string(item, "delta");

		if (host_sleep(p->host, replay_delay(item)) != AGENT_OK)
			return AGENT_CANCELLED;
		replay_delta(p, delta, sink, out);
	}
	return AGENT_OK;
}

/* After a turn with onDecision: jumps to the turn named for the plan's decision. */
static void
replay_follow(struct replay *r, const struct plan_state *plan)
{
	const cJSON *on;
	const char *target;

	if (r->branch < 0)
		return;
	on = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(r->turns, r->branch),
	    "onDecision");
	r->branch = -1;
	if (plan == NULL || plan->decisions == r->decisions_at || plan->decision == NULL)
		return;
	if ((target = json_get_string(on, plan->decision)) != NULL)
		r->next = replay_find_id(r->turns, target, r->count);
}

static int
replay_turn(struct provider *p, const struct conversation *conv, const cJSON *tools,
    const struct provider_sink *sink, struct turn *out, struct agent_error *err)
{
	struct replay *r = p->state;
	const cJSON *turn, *fail, *calls, *c, *usage;
	int i = 0;

	replay_follow(r, p->plan);
	if (r->next >= r->count) {
		agent_error_set(err, "invalid_provider_response",
		    "the replay transcript %s has no turn left", r->name);
		return AGENT_FAILED;
	}
	turn = cJSON_GetArrayItem(r->turns, r->next);
	if (host_sleep(p->host, replay_delay(turn)) != AGENT_OK)
		return AGENT_CANCELLED;
	if (replay_text(p, cJSON_GetObjectItemCaseSensitive(turn, "text"), sink, out) != AGENT_OK)
		return AGENT_CANCELLED;
	usage = cJSON_GetObjectItemCaseSensitive(turn, "usage");
	out->input_tokens = replay_number(usage, "inputTokens");
	out->output_tokens = replay_number(usage, "outputTokens");
	fail = cJSON_GetObjectItemCaseSensitive(turn, "fail");
	if (fail != NULL) {
		const char *want = json_get_string(fail, "code");
		const char *code = replay_fail_codes[0];

		for (const char *const *k = replay_fail_codes; *k; k++) {
			if (want != NULL && strcmp(*k, want) == 0)
				code = *k;
		}
		agent_error_set(err, code, "%s", json_get_string(fail, "message"));
		r->next = r->count;
		return AGENT_FAILED;
	}
	calls = cJSON_GetObjectItemCaseSensitive(turn, "toolCalls");
	cJSON_ArrayForEach(c, calls) {
		char id[48];
		cJSON *expanded = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c, "arguments"),
		    true);
		char *args;

		replay_expand_json(expanded, p->plan);
		args = json_print(expanded);
		cJSON_Delete(expanded);
		snprintf(id, sizeof id, "call_%d_%d", r->played + 1, i++);
		turn_add_call(out, id, json_get_string(c, "name"), args);
		free(args);
	}
	if (cJSON_GetObjectItemCaseSensitive(turn, "onDecision") != NULL) {
		r->branch = r->next;
		r->decisions_at = p->plan ? p->plan->decisions : 0;
	}
	r->next++;
	r->played++;
	return AGENT_OK;
}

static void
replay_close(struct provider *p)
{
	struct replay *r = p->state;

	if (r == NULL)
		return;
	cJSON_Delete(r->doc);
	free(r->name);
	free(r);
	p->state = NULL;
}

/* Where the transcript is, for a checkpoint. */
static cJSON *
replay_save(struct provider *p)
{
	struct replay *r = p->state;
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "next", r->next);
	cJSON_AddNumberToObject(o, "played", r->played);
	cJSON_AddNumberToObject(o, "branch", r->branch);
	cJSON_AddNumberToObject(o, "decisionsAt", r->decisions_at);
	return o;
}

static bool
replay_restore(struct provider *p, const cJSON *state)
{
	struct replay *r = p->state;

	if (!cJSON_IsObject(state) || !json_check_int(state, "next", 0, r->count) ||
	    !json_check_int(state, "played", 0, 1e9) ||
	    !json_check_int(state, "branch", -1, r->count - 1) ||
	    !json_check_int(state, "decisionsAt", 0, 1e9) ||
	    cJSON_GetObjectItemCaseSensitive(state, "next") == NULL)
		return false;
	r->next = (int)replay_number(state, "next");
	r->played = (int)replay_number(state, "played");
	r->branch = cJSON_GetObjectItemCaseSensitive(state, "branch") ?
	    (int)cJSON_GetObjectItemCaseSensitive(state, "branch")->valuedouble : -1;
	r->decisions_at = (unsigned)replay_number(state, "decisionsAt");
	return true;
}

const struct provider_ops provider_replay_ops = {
	.kind = "replay",
	.open = replay_open,
	.turn = replay_turn,
	.close = replay_close,
	.save = replay_save,
	.restore = replay_restore,
};
