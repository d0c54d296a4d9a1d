/*
 * bench/longrun: a 500-step run of the built-in loop (the replay transcript
 * longrun.json without its delays: each step a tool result of about 64 KiB),
 * driven over the host protocol as taskdeckd drives it.  For each step: the
 * bytes of its checkpoint lines, the bytes the whole-conversation checkpoint
 * of before would have had at that point (computed from the same run), the
 * agent's own time (model answer received to the next model turn begun,
 * the tool's run excluded), and the time it takes here to print the whole
 * conversation once (what the old checkpoint did at least twice per step).
 *
 * Usage: longrun-bench AGENT TRANSCRIPT WORKDIR > table
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define MAX_STEPS 2000

struct step {
	long long think_us, tool_start_us, tool_end_us;
	size_t new_bytes, old_bytes;
	size_t messages;	/* in the conversation after the step */
	long long old_print_us;
};

static long long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * After the run (not to slow the agent's lines down): the time to print the
 * conversation as it was after each step, as the old checkpoint did.
 */
static void
old_print_times(struct step *steps, int nstep, const cJSON *all)
{
	cJSON *part = cJSON_CreateArray();
	const cJSON *m = all->child;
	size_t have = 0;

	for (int i = 0; i < nstep; i++) {
		long long p0;
		char *whole;

		while (have < steps[i].messages && m != NULL) {
			cJSON_AddItemToArray(part, cJSON_Duplicate(m, true));
			m = m->next;
			have++;
		}
		if (steps[i].messages == 0)
			continue;
		p0 = now_us();
		whole = cJSON_PrintUnformatted(part);
		steps[i].old_print_us = now_us() - p0;
		free(whole);
	}
	cJSON_Delete(part);
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *data;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0)
		return NULL;
	rewind(f);
	data = malloc((size_t)n + 1);
	if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n)
		return NULL;
	data[n] = '\0';
	fclose(f);
	return data;
}

/* The transcript without its delays, written to dir/longrun.json. */
static void
write_transcript(const char *src, const char *dir)
{
	char *text = slurp(src), path[4200], *out;
	cJSON *doc = text ? cJSON_Parse(text) : NULL, *t;
	FILE *f;

	if (doc == NULL) {
		fprintf(stderr, "longrun-bench: cannot read %s\n", src);
		exit(1);
	}
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(doc, "turns"))
		cJSON_DeleteItemFromObject(t, "delayMs");
	snprintf(path, sizeof path, "%s/longrun.json", dir);
	out = cJSON_PrintUnformatted(doc);
	f = fopen(path, "w");
	if (f == NULL || fputs(out, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "longrun-bench: cannot write %s\n", path);
		exit(1);
	}
	free(out);
	free(text);
	cJSON_Delete(doc);
}

static cJSON *
start_line(const char *ws, const char *replay)
{
	cJSON *s = cJSON_CreateObject();
	cJSON *run = cJSON_AddObjectToObject(s, "run");
	cJSON *config = cJSON_AddObjectToObject(s, "config");
	cJSON *prov = cJSON_AddObjectToObject(s, "provider");
	cJSON *limits = cJSON_AddObjectToObject(s, "limits");

	cJSON_AddStringToObject(s, "type", "start");
	cJSON_AddStringToObject(run, "id", "run_00000000000000000bench");
	cJSON_AddStringToObject(run, "prompt", "Read long.txt 499 times.");
	cJSON_AddStringToObject(run, "permissionProfile", "workspace-write");
	cJSON_AddStringToObject(run, "workspace", ws);
	cJSON_AddStringToObject(config, "framework", "taskdeck");
	cJSON_AddStringToObject(config, "model", "longrun");
	cJSON_AddStringToObject(prov, "kind", "replay");
	cJSON_AddStringToObject(prov, "replayDir", replay);
	cJSON_AddArrayToObject(s, "history");
	cJSON_AddNumberToObject(limits, "maxTurns", 1000);
	cJSON_AddNumberToObject(limits, "maxToolOutputBytes", 65536);
	return s;
}

static void
send_line(int fd, cJSON *msg)
{
	char *text = cJSON_PrintUnformatted(msg);
	size_t len = strlen(text);

	text = realloc(text, len + 2);
	text[len++] = '\n';
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, text + off, len - off);

		if (n <= 0) {
			perror("longrun-bench: write");
			exit(1);
		}
		off += (size_t)n;
	}
	free(text);
	cJSON_Delete(msg);
}

static int
cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static struct step steps[MAX_STEPS];
	char ws[3900], replay[3900], logp[3900];
	int in[2], out[2], nstep = 0;
	pid_t pid;
	char *buf = NULL;
	size_t len = 0, cap = 0, msg_bytes = 0;
	cJSON *all = cJSON_CreateArray();
	long long finish_us = 0, t0;
	bool done = false;

	if (argc != 4) {
		fprintf(stderr, "usage: longrun-bench AGENT TRANSCRIPT WORKDIR\n");
		return 2;
	}
	snprintf(ws, sizeof ws, "%s/ws", argv[3]);
	snprintf(replay, sizeof replay, "%s/replay", argv[3]);
	snprintf(logp, sizeof logp, "%s/agent.log", argv[3]);
	mkdir(ws, 0700);
	mkdir(replay, 0700);
	write_transcript(argv[2], replay);
	if (pipe(in) != 0 || pipe(out) != 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		int log = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(log, 2);
		if (chdir(ws) != 0)
			_exit(127);
		execl(argv[1], argv[1], (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t0 = now_us();
	send_line(in[1], start_line(ws, replay));
	while (!done) {
		char *nl;
		ssize_t n;

		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
		}
		n = read(out[0], buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
		while (!done && (nl = memchr(buf, '\n', len)) != NULL) {
			long long at = now_us();
			size_t line_len = (size_t)(nl - buf) + 1;
			cJSON *msg = cJSON_ParseWithLength(buf, line_len - 1);
			const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(msg, "type"));
			struct step *st = nstep > 0 ? &steps[nstep - 1] : NULL;

			if (type == NULL)
				type = "";
			if (strcmp(type, "progress") == 0 && strcmp(cJSON_GetStringValue(
			    cJSON_GetObjectItem(msg, "phase")), "thinking") == 0 && nstep < MAX_STEPS) {
				st = &steps[nstep++];
				st->think_us = at;
			} else if (strcmp(type, "tool") == 0 && st != NULL) {
				const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(msg, "status"));

				if (strcmp(s, "started") == 0)
					st->tool_start_us = at;
				else
					st->tool_end_us = at;
			} else if (strcmp(type, "checkpoint") == 0 && st != NULL) {
				cJSON *cp = cJSON_GetObjectItem(msg, "checkpoint");
				cJSON *append = cJSON_GetObjectItem(cp, "append"), *m;
				size_t append_bytes = 0;

				cJSON_ArrayForEach(m, append) {
					char *t = cJSON_PrintUnformatted(m);

					append_bytes += strlen(t) + 1;
					free(t);
					cJSON_AddItemToArray(all, cJSON_Duplicate(m, true));
				}
				msg_bytes += append_bytes;
				st->new_bytes += line_len;
				/* The old line: this one with every message instead of the new ones. */
				st->old_bytes += line_len - append_bytes + msg_bytes;
				st->messages = (size_t)cJSON_GetArraySize(all);
			} else if (strcmp(type, "request") == 0) {
				cJSON *r = cJSON_CreateObject(), *e;

				cJSON_AddStringToObject(r, "type", "response");
				cJSON_AddItemToObject(r, "id", cJSON_Duplicate(cJSON_GetObjectItem(msg,
				    "id"), true));
				e = cJSON_AddObjectToObject(r, "error");
				cJSON_AddStringToObject(e, "code", "not_found");
				cJSON_AddStringToObject(e, "message", "the bench answers no request");
				send_line(in[1], r);
			} else if (strcmp(type, "finish") == 0) {
				finish_us = at;
				done = true;
				printf("# finish: %s in %.1f s\n", cJSON_GetStringValue(cJSON_GetObjectItem(msg,
				    "status")), (double)(at - t0) / 1e6);
			}
			cJSON_Delete(msg);
			memmove(buf, buf + line_len, len - line_len);
			len -= line_len;
		}
	}
	close(in[1]);
	waitpid(pid, NULL, 0);
	if (!done) {
		fprintf(stderr, "longrun-bench: the agent ended without finish (see %s)\n", logp);
		return 1;
	}

	old_print_times(steps, nstep, all);
	/* step, bytes, old bytes, agent time (us), old print (us) */
	printf("# step new_checkpoint_bytes old_checkpoint_bytes agent_us old_print_us\n");
	{
		long long agent[MAX_STEPS];
		size_t new_total = 0, old_total = 0;

		for (int i = 0; i < nstep; i++) {
			struct step *st = &steps[i];
			long long next = i + 1 < nstep ? steps[i + 1].think_us : finish_us;

			agent[i] = st->tool_start_us ? (st->tool_start_us - st->think_us) +
			    (next - st->tool_end_us) : next - st->think_us;
			new_total += st->new_bytes;
			old_total += st->old_bytes;
			printf("%d %zu %zu %lld %lld\n", i + 1, st->new_bytes, st->old_bytes, agent[i],
			    st->old_print_us);
		}
		printf("# total checkpoint bytes: new %zu (%.1f MiB), old %zu (%.1f MiB)\n",
		    new_total, new_total / 1048576.0, old_total, old_total / 1048576.0);
		for (int lo = 0; lo < nstep; lo += 100) {
			int hi = lo + 100 < nstep ? lo + 100 : nstep;
			long long w[MAX_STEPS];

			memcpy(w, agent + lo, (size_t)(hi - lo) * sizeof *w);
			qsort(w, (size_t)(hi - lo), sizeof *w, cmp_ll);
			printf("# steps %d-%d: agent time median %lld us, p90 %lld us\n", lo + 1, hi,
			    w[(hi - lo) / 2], w[(hi - lo) * 9 / 10]);
		}
	}
	cJSON_Delete(all);
	free(buf);
	return 0;
}
