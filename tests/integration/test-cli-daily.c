/*
 * The CLI for daily use, against a real taskdeckd: names instead of ids, the
 * current project (taskdeck use), runs list across projects with AGE,
 * tables fitted to a terminal, runs logs --tail/--since/--timestamps, help,
 * and doctor's optional CLIs.
 */
#include <criterion/criterion.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(cli_daily, .init = svc_setup, .fini = svc_teardown, .timeout = 180);

struct run {
	int status;
	char *out;
	char *err;
};

/*
 * Runs "taskdeck ARGS" for the service s, with env (assignments, may be "")
 * before it and the CLI's own settings under s->home/xdg; captures stdout
 * and stderr.
 */
static struct run
cli_env(const struct svc *s, const char *env, const char *fmt, ...)
{
	char args[4096], errpath[512];
	struct run r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(errpath, sizeof errpath, "%s/cli.stderr", s->home);
	r.status = run_capture(s, &r.out, "XDG_CONFIG_HOME=%s/xdg TASKDECK_PROJECT= %s %s %s 2>%s",
	    s->home, env, harness_bin("taskdeck"), args, errpath);
	r.err = harness_slurp(errpath, NULL);
	cr_assert_not_null(r.err);
	return r;
}

#define cli(...) cli_env(&svc, "", __VA_ARGS__)

/*
 * "taskdeck ARGS" on a terminal (a pty of script(1)) with COLUMNS=columns
 * (0: unset); stdout and stderr together, without the pty's '\r'.
 */
static struct run
cli_tty(int columns, const char *fmt, ...)
{
	char args[2048], cmd[4096];
	struct run r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "XDG_CONFIG_HOME=%s/xdg TASKDECK_PROJECT= %s%.0d %s %s",
	    svc.home, columns > 0 ? "COLUMNS=" : "", columns, harness_bin("taskdeck"), args);
	r.status = run_capture(&svc, &r.out, "script -qec '%s' /dev/null </dev/null", cmd);
	for (char *p = r.out, *q = r.out;; p++) {
		if (*p != '\r')
			*q++ = *p;
		if (*p == '\0')
			break;
	}
	r.err = strdup("");
	return r;
}

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* A new project's id (free it). */
static char *
project_new(const char *name)
{
	return http_project_new(&svc, name);
}

/* A replay run of model in project (an id or a name), waited for; its id (free it). */
static char *
run_replay(const char *project, const char *model, const char *prompt)
{
	struct run r = cli("--json run --project '%s' --provider replay --model %s --wait "
	    "--wait-timeout 60 '%s'", project, model, prompt);
	cJSON *doc;
	char *id;

	cr_assert_eq(r.status, 0, "run %s in %s: exit %d: %s", model, project, r.status, r.err);
	doc = json_doc(r.out);
	id = strdup(json_str(doc, "id"));
	cJSON_Delete(doc);
	run_free(&r);
	return id;
}

/* True when some line of text matches the extended regular expression re. */
static bool
has_line(const char *text, const char *re)
{
	regex_t rx;
	bool found;

	cr_assert_eq(regcomp(&rx, re, REG_EXTENDED | REG_NEWLINE | REG_NOSUB), 0, "%s", re);
	found = regexec(&rx, text, 0, NULL, 0) == 0;
	regfree(&rx);
	return found;
}

/* Lines of text (a last one without '\n' counts). */
static size_t
lines_of(const char *text)
{
	size_t n = 0;

	for (const char *p = text; *p != '\0'; p++) {
		if (*p == '\n' || p[1] == '\0')
			n++;
	}
	return n;
}

/* Characters (not bytes) of the longest line of text. */
static size_t
widest_line(const char *text)
{
	size_t widest = 0, w = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
		if (*p == '\n') {
			w = 0;
			continue;
		}
		if ((*p & 0xc0) != 0x80 && ++w > widest)
			widest = w;
	}
	return widest;
}

Test(cli_daily, names_prefixes_and_their_exit_codes)
{
	char *alpha = project_new("alpha"), *alphabet = project_new("Alphabet");
	char *beta = project_new("beta"), *run;
	struct run r;

	r = cli("--json projects show beta");
	cr_assert_eq(r.status, 0, "by name: %s", r.err);
	cr_expect_not_null(strstr(r.out, beta), "%s", r.out);
	run_free(&r);
	r = cli("--json projects show BET");
	cr_assert_eq(r.status, 0, "by a case-insensitive prefix: %s", r.err);
	cr_expect_not_null(strstr(r.out, beta), "%s", r.out);
	run_free(&r);
	/* the exact name wins over the prefix of another */
	r = cli("--json projects show alpha");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, alpha), "%s", r.out);
	run_free(&r);
	r = cli("projects show alp");
	cr_expect_eq(r.status, 2, "an ambiguous name is a usage error: exit %d", r.status);
	cr_expect_not_null(strstr(r.err, alpha), "the candidates: %s", r.err);
	cr_expect_not_null(strstr(r.err, alphabet), "the candidates: %s", r.err);
	cr_expect_eq(r.out[0], '\0', "%s", r.out);
	run_free(&r);
	r = cli("projects show nothing-like-it");
	cr_expect_eq(r.status, 4, "not found: exit %d: %s", r.status, r.err);
	run_free(&r);
	r = cli("runs list --project alp");
	cr_expect_eq(r.status, 2, "an ambiguous --project: exit %d: %s", r.status, r.err);
	run_free(&r);

	/* a run in a project named by a prefix, its session found by its title */
	run = run_replay("bet", "quick", "Say hello by name");
	r = cli("sessions list beta");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "Say hello by name"), "%s", r.out);
	run_free(&r);
	r = cli("--json sessions show 'say hello by'");
	cr_assert_eq(r.status, 0, "a session by its title's prefix: %s", r.err);
	cr_expect_not_null(strstr(r.out, beta), "%s", r.out);
	run_free(&r);
	r = cli("runs list --project beta");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, run), "%s", r.out);
	run_free(&r);
	r = cli("defaults get Beta");
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, beta), "%s", r.out);
	run_free(&r);
	free(run);
	free(alpha);
	free(alphabet);
	free(beta);
}

/* Names in any case, as docs/cli.md says, for letters beyond ASCII too. */
Test(cli_daily, names_ignore_case_beyond_ascii)
{
	char *unicode = project_new("\303\234n\303\257code Pr\303\266ject");	/* Ünïcode Pröject */
	char *greek = project_new("\316\224\316\255\316\273\317\204\316\261");	/* Δέλτα */
	struct run r;

	r = cli("--json projects show '\303\274n\303\257'");			/* ünï */
	cr_expect_eq(r.status, 0, "a lower-case prefix: %s", r.err);
	cr_expect_not_null(strstr(r.out, unicode), "%s", r.out);
	run_free(&r);
	r = cli("--json projects show '\303\234N\303\217CODE PR\303\226'");	/* ÜNÏCODE PRÖ */
	cr_expect_eq(r.status, 0, "an upper-case prefix: %s", r.err);
	cr_expect_not_null(strstr(r.out, unicode), "%s", r.out);
	run_free(&r);
	r = cli("use '\316\264\316\255\316\273'");				/* δέλ */
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, greek), "%s", r.out);
	run_free(&r);
	r = cli("__complete use '\303\274n'");					/* ün<TAB> */
	cr_expect_eq(r.status, 0);
	cr_expect_not_null(strstr(r.out, "\303\234n\303\257code Pr\303\266ject\t"),
	    "completed ignoring case: %s", r.out);
	run_free(&r);
	free(unicode);
	free(greek);
}

Test(cli_daily, use_persists_per_service)
{
	char *gamma = project_new("gamma"), *delta = project_new("delta"), *run;
	struct svc other;
	struct run r;

	r = cli("use");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "no current project"), "%s", r.out);
	run_free(&r);
	r = cli("run --provider replay --model quick 'No project'");
	cr_expect_eq(r.status, 2, "run without a project: exit %d", r.status);
	run_free(&r);

	r = cli("use gam");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, gamma), "%s", r.out);
	run_free(&r);
	r = cli("use");
	cr_expect(has_line(r.out, "^project: gamma$"), "%s", r.out);
	run_free(&r);
	/* a later invocation runs in it, and says so on stderr */
	r = cli("--json run --provider replay --model quick --wait 'In the current project'");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, gamma), "the run is in gamma: %s", r.out);
	cr_expect_not_null(strstr(r.err, "gamma"), "which project, on stderr: %s", r.err);
	{
		cJSON *doc = json_doc(r.out);

		run = strdup(json_str(doc, "id"));
		cJSON_Delete(doc);
	}
	run_free(&r);
	r = cli("runs list");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, run), "%s", r.out);
	cr_expect_null(strstr(r.out, "PROJECT"), "one project's runs: %s", r.out);
	run_free(&r);
	r = cli("sessions list");
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "In the current project"), "%s", r.out);
	run_free(&r);

	/* TASKDECK_PROJECT wins, and is obvious: nothing said */
	r = cli_env(&svc, "TASKDECK_PROJECT=delta", "use");
	cr_expect(has_line(r.out, "^project: delta$"), "%s", r.out);
	run_free(&r);
	r = cli_env(&svc, "TASKDECK_PROJECT=delta", "runs list");
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_null(strstr(r.out, run), "delta has no runs: %s", r.out);
	cr_expect_null(strstr(r.err, "current"), "%s", r.err);
	run_free(&r);

	/* another service (another home) has no current project */
	svc_start(&other);
	{
		char cmd[1024];
		char *out;
		int rc;

		snprintf(cmd, sizeof cmd, "XDG_CONFIG_HOME=%s/xdg TASKDECK_PROJECT= %s use",
		    svc.home, harness_bin("taskdeck"));
		rc = run_capture(&other, &out, "%s", cmd);
		cr_expect_eq(rc, 0);
		cr_expect_not_null(strstr(out, "no current project"), "the other service: %s", out);
		free(out);
	}
	svc_destroy(&other);
	svc_export_env(&svc);

	r = cli("use --clear");
	cr_expect_eq(r.status, 0, "%s", r.err);
	run_free(&r);
	r = cli("use");
	cr_expect_not_null(strstr(r.out, "no current project"), "%s", r.out);
	run_free(&r);
	r = cli("use no-such-project");
	cr_expect_eq(r.status, 4, "%s", r.err);
	run_free(&r);
	free(run);
	free(gamma);
	free(delta);
}

Test(cli_daily, runs_list_across_projects_with_age)
{
	char *p1 = project_new("north"), *p2 = project_new("south");
	char *r1 = run_replay("north", "quick", "From the north"), *r2;
	struct run r;

	r2 = run_replay("south", "quick", "From the south");
	r = cli("runs list");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(has_line(r.out, "^ID +PROJECT +STATUS +SESSION +AGE +COST +PROMPT$"), "%s", r.out);
	cr_expect(has_line(r.out, "^run_[0-9a-f]+ +north +completed +ses_[0-9a-f]+ +[0-9]+[smhd] "),
	    "%s", r.out);
	cr_expect(has_line(r.out, "^run_[0-9a-f]+ +south +completed +ses_[0-9a-f]+ +[0-9]+[smhd] "),
	    "%s", r.out);
	/* newest first */
	cr_expect(strstr(r.out, r2) < strstr(r.out, r1), "%s", r.out);
	run_free(&r);
	r = cli("--json runs list --limit 1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, r2), "%s", r.out);
	cr_expect_null(strstr(r.out, r1), "%s", r.out);
	run_free(&r);
	r = cli("use north");
	run_free(&r);
	r = cli("runs list --all-projects");
	cr_expect(strstr(r.out, r1) != NULL && strstr(r.out, r2) != NULL, "%s", r.out);
	run_free(&r);
	r = cli("runs list");
	cr_expect(strstr(r.out, r1) != NULL && strstr(r.out, r2) == NULL, "%s", r.out);
	run_free(&r);
	r = cli("use --clear");
	run_free(&r);
	r = cli("sessions list north");
	cr_expect(has_line(r.out, "^ID +WORKSPACE +LAST RUN +STATUS +AGE +TITLE$"), "%s", r.out);
	run_free(&r);
	r = cli("projects list");
	cr_expect(has_line(r.out, "^prj_[0-9a-f]+ +north +[0-9]+[smhd] "), "%s", r.out);
	run_free(&r);
	free(r1);
	free(r2);
	free(p1);
	free(p2);
}

Test(cli_daily, tables_fit_the_terminal_but_not_a_pipe)
{
	static const char prompt[] = "A prompt long enough to be cut on a narrow terminal, "
	    "since it says a great deal about very little";
	char *project = project_new("wide"), *run = run_replay("wide", "quick", prompt);
	struct run r;

	r = cli_tty(100, "runs list --project wide");
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_leq(widest_line(r.out), 100, "COLUMNS=100:\n%s", r.out);
	cr_expect(has_line(r.out, "PROMPT$"), "%s", r.out);
	cr_expect(has_line(r.out, " A prompt long [a-z ]*\u2026$"), "the prompt is cut "
	    "with …:\n%s", r.out);
	run_free(&r);
	/* narrower than the ids and the short columns: only the prompt gives way */
	r = cli_tty(60, "runs list --project wide");
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, run), "ids are never cut:\n%s", r.out);
	cr_expect(has_line(r.out, " A prompt \u2026$"), "the prompt at its narrowest:\n%s", r.out);
	run_free(&r);
	r = cli_tty(60, "runs list --project wide --wide");
	cr_expect_not_null(strstr(r.out, prompt), "--wide cuts nothing:\n%s", r.out);
	run_free(&r);
	r = cli_tty(60, "-o wide runs list --project wide");
	cr_expect_not_null(strstr(r.out, prompt), "-o wide cuts nothing:\n%s", r.out);
	run_free(&r);
	r = cli("runs list --project wide");
	cr_expect_not_null(strstr(r.out, prompt), "a pipe gets the whole prompt:\n%s", r.out);
	run_free(&r);
	r = cli_env(&svc, "COLUMNS=60", "runs list --project wide");
	cr_expect_not_null(strstr(r.out, prompt), "a pipe ignores COLUMNS:\n%s", r.out);
	run_free(&r);

	/* doctor too: its messages fit the terminal, whole in a pipe */
	r = cli_tty(60, "doctor");
	cr_expect_leq(widest_line(r.out), 60, "doctor at COLUMNS=60:\n%s", r.out);
	run_free(&r);
	r = cli_tty(200, "doctor");
	cr_expect_gt(widest_line(r.out), 60, "doctor at COLUMNS=200 uses the room:\n%s", r.out);
	run_free(&r);
	free(run);
	free(project);
}

Test(cli_daily, logs_tail_since_timestamps)
{
	char *project = project_new("logs"), *run = run_replay("logs", "research", "Write it");
	struct run all, r;

	all = cli("runs logs %s", run);
	cr_assert_eq(all.status, 0, "%s", all.err);
	cr_assert_gt(lines_of(all.err), 4, "%s", all.err);
	run_free(&all);

	/* the last line: the run's last progress, then how it ended */
	r = cli("runs logs %s --tail 1", run);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(r.out[0], '\0', "no output line in the last one: %s", r.out);
	cr_expect_eq(lines_of(r.err), 2, "one line and the end: %s", r.err);
	cr_expect(has_line(r.err, "^\\[progress\\] finishing"), "%s", r.err);
	cr_expect(has_line(r.err, "^taskdeck: run run_[0-9a-f]+ completed$"), "%s", r.err);
	run_free(&r);
	r = cli("runs logs %s --tail 2", run);
	cr_expect(has_line(r.out, "^The report is ready"), "the output's last line, whole: %s",
	    r.out);
	cr_expect_eq(lines_of(r.out), 1, "%s", r.out);
	cr_expect_eq(lines_of(r.err), 2, "%s", r.err);
	run_free(&r);
	r = cli("runs logs %s --tail 0", run);
	cr_expect_eq(r.out[0], '\0', "%s", r.out);
	cr_expect_eq(lines_of(r.err), 1, "only the end: %s", r.err);
	run_free(&r);

	r = cli("runs logs %s --tail 3 --timestamps", run);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(has_line(r.out, "^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-9:]{8}\\.[0-9]{3}Z The report"),
	    "a time before the output line: %s", r.out);
	cr_expect(has_line(r.err, "^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-9:]{8}\\.[0-9]{3}Z \\[progress\\]"),
	    "%s", r.err);
	run_free(&r);
	r = cli("runs logs %s", run);
	cr_expect(!has_line(r.err, "^20[0-9]{2}-"), "no time without --timestamps: %s", r.err);
	run_free(&r);

	r = cli("runs logs %s --since 2099-01-01T00:00:00Z", run);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(r.out[0], '\0', "nothing since 2099: %s", r.out);
	cr_expect_eq(lines_of(r.err), 1, "only the end: %s", r.err);
	run_free(&r);
	r = cli("runs logs %s --since 1h", run);
	cr_expect_gt(lines_of(r.err), 4, "the last hour has it all: %s", r.err);
	run_free(&r);
	r = cli("runs logs %s --since 2000-01-01T01:00:00+01:00 --tail 1", run);
	cr_expect_eq(lines_of(r.err), 2, "%s", r.err);
	run_free(&r);
	r = cli("runs logs %s --since yesterday", run);
	cr_expect_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	r = cli("runs logs %s --tail -3", run);
	cr_expect_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	/* with --follow, the tail of a run that has ended, then its end */
	r = cli("runs logs %s -f --tail 1 --timestamps", run);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(lines_of(r.err), 2, "%s", r.err);
	run_free(&r);
	free(run);
	free(project);
}

/*
 * Every command of `taskdeck help --all` has its help (help CMD and CMD -h, exit
 * 0), and its usage names every option the command takes (the options line
 * comes from the command table).
 */
/* True when usage names option (--x) as itself, not inside --x-y or --no-x. */
static bool
usage_names(const char *usage, const char *option)
{
	size_t n = strlen(option);

	for (const char *at = strstr(usage, option); at != NULL; at = strstr(at + 1, option)) {
		char before = at > usage ? at[-1] : ' ', after = at[n];

		if (!(before >= 'a' && before <= 'z') && before != '-' &&
		    !(after >= 'a' && after <= 'z') && after != '-')
			return true;
	}
	return false;
}

Test(cli_daily, help_of_every_command_names_its_options)
{
	struct run top = cli("help --all"), r;
	char *save = NULL;
	int commands = 0;

	cr_assert_eq(top.status, 0, "%s", top.err);
	for (char *line = strtok_r(top.out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char words[3][64] = { "", "", "" }, name[200], *usage, *options, *o, *osave;
		int n;

		if (strncmp(line, "  ", 2) != 0 || line[2] < 'a' || line[2] > 'z')
			continue;
		n = sscanf(line, "%63s %63s %63s", words[0], words[1], words[2]);
		/* the command's words: those before its arguments and options */
		snprintf(name, sizeof name, "%s", words[0]);
		for (int i = 1; i < n && words[i][0] >= 'a' && words[i][0] <= 'z'; i++) {
			strcat(name, " ");
			strcat(name, words[i]);
		}
		r = cli("help %s", name);
		cr_assert_eq(r.status, 0, "help %s: %s", name, r.err);
		cr_assert_eq(strncmp(r.out, "usage: taskdeck ", 16), 0, "help %s: %s", name, r.out);
		usage = strndup(r.out, strstr(r.out, "\n\n") != NULL ?
		    (size_t)(strstr(r.out, "\n\n") - r.out) : strlen(r.out));
		if ((options = strstr(r.out, "\noptions:")) != NULL) {
			options = strndup(options + 9, strcspn(options + 9, "\n"));
			for (o = strtok_r(options, " ,", &osave); o != NULL;
			    o = strtok_r(NULL, " ,", &osave)) {
				if (strncmp(o, "--", 2) == 0)
					cr_expect(usage_names(usage, o), "the usage of %s leaves out "
					    "%s:\n%s", name, o, usage);
			}
			free(options);
		}
		free(usage);
		run_free(&r);
		r = cli("%s -h", name);
		cr_expect_eq(r.status, 0, "%s -h: %s", name, r.err);
		cr_expect_eq(strncmp(r.out, "usage: taskdeck ", 16), 0, "%s -h: %s", name, r.out);
		run_free(&r);
		commands++;
	}
	run_free(&top);
	cr_assert_gt(commands, 40);
}

Test(cli_daily, help_overview_and_the_nearest_command)
{
	struct run r = cli("help");

	/* short and grouped, as gh's: every group on one line */
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "Work with runs:"), "%s", r.out);
	cr_expect(has_line(r.out, "^  runs +list show .*logs watch"), "%s", r.out);
	cr_expect_lt(lines_of(r.out), 50, "%zu lines: %s", lines_of(r.out), r.out);
	run_free(&r);
	r = cli("-h");
	cr_expect(r.status == 0 && lines_of(r.out) < 50, "-h: %s", r.out);
	run_free(&r);
	r = cli("help --all");
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "Commands:"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "runs logs RUN"), "%s", r.out);
	run_free(&r);
	r = cli("help runs logs");
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "--tail"), "%s", r.out);
	run_free(&r);
	r = cli("runs lsit");
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "did you mean 'runs list'?"), "%s", r.err);
	run_free(&r);
	r = cli("rnus list");
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "did you mean 'runs list'?"), "%s", r.err);
	run_free(&r);
	r = cli("dotcor");
	cr_expect_not_null(strstr(r.err, "did you mean 'doctor'?"), "%s", r.err);
	run_free(&r);
	r = cli("help sesions list");
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "did you mean 'sessions list'?"), "%s", r.err);
	run_free(&r);
	r = cli("xyzzy");
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect_null(strstr(r.err, "did you mean"), "nothing is near: %s", r.err);
	run_free(&r);
	/* a command of a group typed without it, as kubectl logs and git diff are */
	r = cli("diff run_01a215f179a60001454c577c");
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "did you mean 'runs diff'?"), "%s", r.err);
	run_free(&r);
	r = cli("revert run_01a215f179a60001454c577c --yes");
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "did you mean 'runs revert'?"), "%s", r.err);
	run_free(&r);
	r = cli("logs");
	cr_expect_not_null(strstr(r.err, "did you mean 'runs logs'?"), "%s", r.err);
	run_free(&r);
	r = cli("approve ses_01a215f179a60002101734d5");
	cr_expect_not_null(strstr(r.err, "did you mean 'plan approve'?"), "%s", r.err);
	run_free(&r);
	r = cli("archive demo");
	cr_expect_not_null(strstr(r.err, "did you mean 'projects archive' or 'sessions archive'?"),
	    "%s", r.err);
	run_free(&r);
}

/*
 * An optional external CLI that is not installed is an info line, not a
 * warning, until a project's defaults use its framework.
 */
Test(cli_daily, doctor_optional_clis_are_info_until_used)
{
	char *project = project_new("uses-codex");
	struct run r = cli("doctor");

	cr_assert_eq(r.status, 0, "%s", r.err);
	if (!has_line(r.out, "^runtime-codex +(warn|info) ")) {
		run_free(&r);
		free(project);
		cr_skip_test("codex is installed here");
	}
	cr_expect(has_line(r.out, "^runtime-codex +info "), "%s", r.out);
	cr_expect(!has_line(r.out, "^runtime-(codex|claude-code) +warn"), "%s", r.out);
	cr_expect(!has_line(r.out, "^next: Install"), "%s", r.out);
	run_free(&r);
	r = cli("defaults set uses-codex framework=codex");
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_free(&r);
	r = cli("doctor");
	cr_expect(has_line(r.out, "^runtime-codex +warn "), "a project uses codex: %s", r.out);
	run_free(&r);
	r = cli("defaults set uses-codex --clear framework");
	run_free(&r);
	free(project);
}
