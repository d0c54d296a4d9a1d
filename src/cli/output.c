#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "termtext.h"
#include "timeutil.h"
#include "xalloc.h"

/* A cut free-text column keeps at least this many characters. */
#define OUT_FREE_TEXT_MIN 10

/* --wide (-o wide): tables are never cut. */
static bool out_wide;

void
out_set_wide(bool wide)
{
	out_wide = wide;
}

/*
 * A copy of s that is safe on a terminal (termtext: controls become '?'); a
 * newline becomes a space when one_line, else a newline and an indent.
 */
static char *
out_clean(const char *s, bool one_line)
{
	const struct termtext_style style = { one_line ? " " : "\n  ", " " };
	struct buf b;

	buf_init(&b, 0);
	termtext_append(&b, s, &style);
	return buf_steal(&b);
}

/* Characters (not bytes) of a UTF-8 string. */
static size_t
out_width(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	}
	return n;
}

/* Cuts s (room for 2 more bytes) to max characters, the last one "…". */
static void
out_shorten(char *s, size_t max)
{
	size_t chars = 0;
	char *p;

	if (max == 0 || out_width(s) <= max)
		return;
	for (p = s; *p != '\0'; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && chars++ == max - 1)
			break;
	}
	strcpy(p, "\u2026");
}

void
out_table_init(struct out_table *t, size_t columns, const char *const *header)
{
	t->columns = columns;
	t->rows = 0;
	t->cells = xcalloc(columns, sizeof *t->cells);
	for (size_t i = 0; i < columns; i++)
		t->cells[i] = xstrdup(header[i]);
}

void
out_table_add(struct out_table *t, const char *const *row)
{
	size_t at = (t->rows + 1) * t->columns;

	t->cells = xrealloc(t->cells, (at + t->columns) * sizeof *t->cells);
	for (size_t i = 0; i < t->columns; i++) {
		char *cell = out_clean(row[i] != NULL ? row[i] : "-", true);

		/* room for out_shorten's "…" (3 bytes) over the 2 it replaces at least */
		t->cells[at + i] = xrealloc(cell, strlen(cell) + 3);
	}
	t->rows++;
}

/* The width to fit on a terminal (COLUMNS, else the tty's); 0 in a pipe or a file. */
static size_t
out_terminal_columns(void)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;
	char *end;
	long n;

	if (!isatty(STDOUT_FILENO))
		return 0;
	if (env != NULL && *env != '\0') {
		n = strtol(env, &end, 10);
		if (*end == '\0' && n > 0 && n < 100000)
			return (size_t)n;
	}
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0)
		return 0;
	return ws.ws_col;
}

size_t
out_table_room(void)
{
	return out_wide ? 0 : out_terminal_columns();
}

/*
 * On a terminal, the free-text (last) column is narrowed (cut with "…",
 * never below OUT_FREE_TEXT_MIN) until the rows fit its width; ids and the
 * other columns are never cut.  In a pipe or a file, and with --wide,
 * nothing is cut.
 */
void
out_table_print(const struct out_table *t)
{
	size_t *widths = xcalloc(t->columns, sizeof *widths);
	size_t term = out_wide ? 0 : out_terminal_columns(), total = 0;

	for (size_t r = 0; r <= t->rows; r++) {
		for (size_t c = 0; c < t->columns; c++) {
			size_t w = out_width(t->cells[r * t->columns + c]);

			if (w > widths[c])
				widths[c] = w;
		}
	}
	for (size_t c = 0; c < t->columns; c++)
		total += widths[c] + (c + 1 < t->columns ? 2 : 0);
	if (term > 0 && total > term) {
		size_t over = total - term, *last = &widths[t->columns - 1];

		*last = *last > OUT_FREE_TEXT_MIN + over ? *last - over :
		    *last < OUT_FREE_TEXT_MIN ? *last : OUT_FREE_TEXT_MIN;
	}
	for (size_t r = 0; r <= t->rows; r++) {
		for (size_t c = 0; c < t->columns; c++) {
			char *cell = t->cells[r * t->columns + c];

			if (term > 0 && c + 1 == t->columns)
				out_shorten(cell, widths[c]);
			if (c + 1 == t->columns)
				printf("%s\n", cell);
			else {
				printf("%s%*s", cell,
				    (int)(widths[c] - out_width(cell) + 2), "");
			}
		}
	}
	free(widths);
}

void
out_table_free(struct out_table *t)
{
	for (size_t i = 0; i < (t->rows + 1) * t->columns; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
}

void
out_age(const char *time, char out[16])
{
	int64_t at, s;

	if (time == NULL || !time_parse_utc(time, &at)) {
		snprintf(out, 16, "-");
		return;
	}
	s = (clock_wall_ms() - at) / 1000;
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(out, 16, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(out, 16, "%lldm", (long long)(s / 60));
	else if (s < 86400)
		snprintf(out, 16, "%lldh", (long long)(s / 3600));
	else
		snprintf(out, 16, "%lldd", (long long)(s / 86400));
}

void
out_kv(const char *key, const char *value)
{
	char *clean = out_clean(value != NULL ? value : "-", false), *k = termtext_line(key);

	printf("%s: %s\n", k, clean);
	free(k);
	free(clean);
}

void
out_doc(const struct cli *cli, const char *json)
{
	cJSON *doc;

	if (cli->json) {
		out_json(json);
		return;
	}
	doc = json_parse(json, strlen(json));
	out_flat(doc, NULL);
	cJSON_Delete(doc);
}

void
out_flat(const cJSON *obj, const char *prefix)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, obj) {
		char *key = prefix != NULL ? xasprintf("%s.%s", prefix, item->string) :
		    xstrdup(item->string);

		if (cJSON_IsObject(item) && item->child != NULL)
			out_flat(item, key);
		else if (cJSON_IsString(item))
			out_kv(key, item->valuestring);
		else if (cJSON_IsNull(item))
			out_kv(key, NULL);
		else {
			char *text = json_print(item);

			out_kv(key, text);
			free(text);
		}
		free(key);
	}
}

void
out_json(const char *json)
{
	size_t n = strlen(json);

	fputs(json, stdout);
	if (n == 0 || json[n - 1] != '\n')
		putchar('\n');
}

int
cli_list_start(struct cli *cli, struct cli_list *l, size_t columns,
    const char *const *header)
{
	const char *limit_text = cli_get(cli, "limit");
	char *end;
	int rc;

	memset(l, 0, sizeof *l);
	l->opts = cli_request_options(cli);
	l->cursor = cli_get(cli, "cursor");
	if (limit_text != NULL) {
		errno = 0;
		l->limit = strtol(limit_text, &end, 10);
		if (errno != 0 || *end != '\0' || l->limit < 1 || l->limit > 1000)
			return cli_usage_error(cli, "--limit takes a number from 1 to 1000");
	}
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	out_table_init(&l->table, columns, header);
	buf_init(&l->json, 0);
	buf_appends(&l->json, "[");
	return CLI_EXIT_OK;
}

const char *
cli_list_cursor(const struct cli_list *l)
{
	return l->next != NULL ? l->next : l->cursor;
}

void
cli_list_add(struct cli_list *l, const char *json, const char *const *row)
{
	buf_printf(&l->json, "%s%s", l->count > 0 ? "," : "", json);
	out_table_add(&l->table, row);
	l->count++;
}

bool
cli_list_next(struct cli_list *l, char **next_cursor)
{
	free(l->next);
	l->next = *next_cursor;
	*next_cursor = NULL;
	return l->next != NULL && l->limit == 0;
}

int
cli_list_end(struct cli *cli, struct cli_list *l, const char *noun)
{
	buf_appends(&l->json, "]");
	if (l->rc == CLI_EXIT_OK) {
		if (cli->json)
			out_json(l->json.data);
		else if (l->count == 0)
			printf("no %s\n", noun);
		else
			out_table_print(&l->table);
		if (l->next != NULL)
			fprintf(stderr, "taskdeck: more %s: --cursor %s\n", noun, l->next);
	}
	buf_free(&l->json);
	out_table_free(&l->table);
	free(l->next);
	l->next = NULL;
	return l->rc;
}

bool
cli_confirmed(void)
{
	char answer[16];
	size_t n;

	fprintf(stderr, "[y/N] ");
	fflush(stderr);
	if (fgets(answer, sizeof answer, stdin) == NULL)
		return false;
	n = strcspn(answer, "\r\n");
	answer[n] = '\0';
	for (size_t i = 0; i < n; i++)
		answer[i] = (char)tolower((unsigned char)answer[i]);
	return strcmp(answer, "y") == 0 || strcmp(answer, "yes") == 0;
}
