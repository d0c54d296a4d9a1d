/*
 * The dashboard's state file: $XDG_STATE_HOME/taskdeck/dashboard.state
 * (else ~/.local/state/taskdeck/dashboard.state).  What the user set up and
 * expects back after a restart: the ':' history, the order and filter of
 * each list, the Log's last '&' query and the download directory.  A line
 * each, fields split by tabs (no field holds a tab or a control: they come
 * from one-line editors):
 *
 *   taskdeck-dashboard-state 1
 *   download-dir<TAB>/home/me/reports
 *   sort<TAB>runs<TAB>status
 *   filter<TAB>projects<TAB>ga
 *   log-filter<TAB>error
 *   history<TAB>project alpha
 *
 * Written whole to a temporary file renamed over the old one (mode 0600);
 * a file that is not one of these is ignored, with one message.  Below the
 * views (no curses), beside commands.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buf.h"
#include "paths.h"
#include "tui/tui.h"
#include "xalloc.h"

#define STATE_HEADER "taskdeck-dashboard-state 1"
#define STATE_MAX (256 * 1024)

static const char *const state_lists[] = { "projects", "sessions", "runs", "artifacts",
	"connectors" };

/* The file's path into out; false when there is no home to put it in. */
static bool
state_path(char *out, size_t len, char *dir, size_t dlen)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (xdg != NULL && xdg[0] == '/')
		snprintf(dir, dlen, "%s/taskdeck", xdg);
	else if (home != NULL && home[0] == '/')
		snprintf(dir, dlen, "%s/.local/state/taskdeck", home);
	else
		return false;
	snprintf(out, len, "%s/dashboard.state", dir);
	return true;
}

/* True for text that must not be written: a secret pasted by mistake. */
static bool
state_secret_like(const char *s)
{
	static const char *const marks[] = { "bearer ", "token", "password", "passwd",
		"secret", "sk-", "ghp_", "github_pat_", "xox", "api_key", "apikey",
		"authorization" };

	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
		if (strcasestr(s, marks[i]) != NULL)
			return true;
	}
	return false;
}

/* A field a line may hold: printable, no tab, below a bound. */
static bool
state_field_ok(const char *s)
{
	size_t n = 0;

	for (; s[n] != '\0'; n++) {
		if ((unsigned char)s[n] < 0x20 || s[n] == 0x7f)
			return false;
	}
	return n < 4096;
}

/* Adds line[0..n), spaces around dropped; bounded, the same line moved to the end. */
static void
history_add(struct tui *t, const char *line, size_t n)
{
	while (n > 0 && line[n - 1] == ' ')
		n--;
	while (*line == ' ' && n > 0) {
		line++;
		n--;
	}
	if (n == 0 || !state_field_ok(line) || state_secret_like(line))
		return;
	/* The same line again moves to the end instead of filling the history. */
	for (size_t i = 0; i < t->hist_count; i++) {
		if (strlen(t->hist[i]) == n && strncmp(t->hist[i], line, n) == 0) {
			char *same = t->hist[i];

			memmove(&t->hist[i], &t->hist[i + 1], (t->hist_count - i - 1) *
			    sizeof t->hist[0]);
			t->hist[t->hist_count - 1] = same;
			return;
		}
	}
	if (t->hist_count == TUI_HISTORY_MAX) {
		free(t->hist[0]);
		memmove(&t->hist[0], &t->hist[1], (TUI_HISTORY_MAX - 1) * sizeof t->hist[0]);
		t->hist_count--;
	}
	t->hist[t->hist_count] = xmalloc(n + 1);
	memcpy(t->hist[t->hist_count], line, n);
	t->hist[t->hist_count++][n] = '\0';
}

void
tui_history_add(struct tui *t, const char *line)
{
	size_t n = strlen(line);

	history_add(t, line, n);
	/* The next Up starts from the newest line. */
	t->hist_at = t->hist_count;
}

/*
 * The selection, for the next start to open on: the project, session and
 * run selected (ids only), or, before the lists were read, those it opened on.
 */
static void
state_selection(const struct tui *t, struct buf *b)
{
	const struct m_project *p = model_project(&t->m);
	const struct m_session *s = model_session(&t->m);
	const struct m_run *r = model_run(&t->m);
	const char *ids[3] = { t->start_project, t->start_session, t->start_run };
	static const char *const names[3] = { "project", "session", "run" };

	if (t->start_project[0] == '\0' && p != NULL && p->id != NULL) {
		ids[0] = p->id;
		ids[1] = s != NULL && s->id != NULL ? s->id : "";
		ids[2] = r != NULL && r->id != NULL ? r->id : "";
	}
	for (size_t i = 0; i < 3; i++) {
		if (ids[i][0] != '\0' && state_field_ok(ids[i]) && strlen(ids[i]) < 128)
			buf_printf(b, "selected\t%s\t%s\n", names[i], ids[i]);
	}
}

/* The state as the file holds it (malloc'd). */
static char *
state_text(const struct tui *t)
{
	struct buf b;

	buf_init(&b, 0);
	buf_printf(&b, "%s\n", STATE_HEADER);
	if (t->download_dir_chosen && state_field_ok(t->download_dir))
		buf_printf(&b, "download-dir\t%s\n", t->download_dir);
	for (size_t i = 0; i < 3; i++)
		buf_printf(&b, "sort\t%s\t%s\n", state_lists[i], model_sort_name(t->m.sort[i]));
	for (size_t i = 0; i < sizeof state_lists / sizeof state_lists[0]; i++) {
		if (t->m.list_filter[i][0] != '\0' && state_field_ok(t->m.list_filter[i]) &&
		    !state_secret_like(t->m.list_filter[i]))
			buf_printf(&b, "filter\t%s\t%s\n", state_lists[i], t->m.list_filter[i]);
	}
	if (t->m.log.last_filter[0] != '\0' && state_field_ok(t->m.log.last_filter) &&
	    !state_secret_like(t->m.log.last_filter))
		buf_printf(&b, "log-filter\t%s\n", t->m.log.last_filter);
	for (size_t i = 0; i < t->hist_count; i++)
		buf_printf(&b, "history\t%s\n", t->hist[i]);
	state_selection(t, &b);
	return buf_steal(&b);
}

static int
state_list(const char *name)
{
	for (size_t i = 0; i < sizeof state_lists / sizeof state_lists[0]; i++) {
		if (strcmp(state_lists[i], name) == 0)
			return (int)i;
	}
	return -1;
}

/* Applies one line; false when it is not one of the file's. */
static bool
state_line(struct tui *t, char *line)
{
	char *f[3] = { line, NULL, NULL };
	int list, sort;

	for (size_t i = 1; i < 3; i++) {
		char *tab = strchr(f[i - 1], '\t');

		if (tab == NULL)
			break;
		*tab = '\0';
		f[i] = tab + 1;
	}
	if (f[1] == NULL || !state_field_ok(f[1]) || (f[2] != NULL && !state_field_ok(f[2])))
		return false;
	if (strcmp(f[0], "download-dir") == 0 && f[2] == NULL && f[1][0] == '/') {
		snprintf(t->download_dir, sizeof t->download_dir, "%s", f[1]);
		t->download_dir_chosen = true;
		return true;
	}
	if (strcmp(f[0], "history") == 0) {
		tui_history_add(t, f[1]);
		return true;
	}
	if (strcmp(f[0], "log-filter") == 0 && f[2] == NULL) {
		snprintf(t->m.log.last_filter, sizeof t->m.log.last_filter, "%s", f[1]);
		return true;
	}
	if (strcmp(f[0], "selected") == 0 && f[2] != NULL) {
		char *to = strcmp(f[1], "project") == 0 ? t->start_project :
		    strcmp(f[1], "session") == 0 ? t->start_session :
		    strcmp(f[1], "run") == 0 ? t->start_run : NULL;

		if (to == NULL || strlen(f[2]) >= sizeof t->start_project)
			return false;
		memcpy(to, f[2], strlen(f[2]) + 1);
		return true;
	}
	if (f[2] == NULL || (list = state_list(f[1])) < 0)
		return false;
	if (strcmp(f[0], "filter") == 0) {
		snprintf(t->m.list_filter[list], sizeof t->m.list_filter[list], "%s", f[2]);
		return true;
	}
	if (strcmp(f[0], "sort") != 0 || list > 2)
		return false;
	for (sort = 0; sort < SORT__COUNT; sort++) {
		if (strcmp(model_sort_name(sort), f[2]) == 0) {
			t->m.sort[list] = sort;
			return true;
		}
	}
	return false;
}

void
tui_state_load(struct tui *t)
{
	char path[4096], dir[4096], *text, *line, *next;
	struct state_saved {
		char download_dir[sizeof t->download_dir];
		bool download_dir_chosen;
		int sort[3];
		char list_filter[5][64];
		char last_filter[MODEL_QUERY_MAX];
	} *saved;
	size_t n;
	FILE *fp;
	int lineno = 0;

	if (!state_path(path, sizeof path, dir, sizeof dir) || (fp = fopen(path, "re")) == NULL)
		return;
	saved = xmalloc(sizeof *saved);
	text = xmalloc(STATE_MAX + 1);
	n = fread(text, 1, STATE_MAX + 1, fp);
	fclose(fp);
	text[n > STATE_MAX ? STATE_MAX : n] = '\0';
	/* What a bad line would leave half applied. */
	memcpy(saved->download_dir, t->download_dir, sizeof saved->download_dir);
	saved->download_dir_chosen = t->download_dir_chosen;
	memcpy(saved->sort, t->m.sort, sizeof saved->sort);
	memcpy(saved->list_filter, t->m.list_filter, sizeof saved->list_filter);
	memcpy(saved->last_filter, t->m.log.last_filter, sizeof saved->last_filter);
	for (line = text; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lineno++;
		if (lineno == 1 ? strcmp(line, STATE_HEADER) == 0 : state_line(t, line))
			continue;
		memcpy(t->download_dir, saved->download_dir, sizeof saved->download_dir);
		t->download_dir_chosen = saved->download_dir_chosen;
		memcpy(t->m.sort, saved->sort, sizeof saved->sort);
		memcpy(t->m.list_filter, saved->list_filter, sizeof saved->list_filter);
		memcpy(t->m.log.last_filter, saved->last_filter, sizeof saved->last_filter);
		for (size_t i = 0; i < t->hist_count; i++)
			free(t->hist[i]);
		t->hist_count = 0;
		model_message(&t->m, t->now_ms, true, "%s is not a state file (line %d): "
		    "ignored; it is written anew", path, lineno);
		free(saved);
		free(text);
		return;
	}
	free(t->state_text);
	t->state_text = state_text(t);
	free(saved);
	free(text);
}

void
tui_state_save(struct tui *t)
{
	char path[4096], dir[4096], tmp[4200];
	char *text = state_text(t);
	size_t len = strlen(text);
	int fd;

	if (t->state_text != NULL && strcmp(t->state_text, text) == 0) {
		free(text);
		return;
	}
	free(t->state_text);
	t->state_text = text;
	if (!state_path(path, sizeof path, dir, sizeof dir) || !paths_mkdir_p(dir, 0700))
		return;
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) != 0) {
		close(fd);
		unlink(tmp);
		return;
	}
	close(fd);
	if (rename(tmp, path) != 0)
		unlink(tmp);
}

void
tui_state_free(struct tui *t)
{
	for (size_t i = 0; i < t->hist_count; i++)
		free(t->hist[i]);
	t->hist_count = 0;
	free(t->state_text);
	t->state_text = NULL;
}
