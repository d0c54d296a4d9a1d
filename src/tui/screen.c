/*
 * The screen: which view draws each pane (the registry), the layout, the
 * title line, the message line and the status bar.  Above the views
 * (view-*.c) and the drawing helpers (draw.c); the loop calls draw_screen,
 * then modal_draw, then screen_flush.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "tui/tui.h"
#include "units.h"

const struct view_ops *
tui_view(const struct tui *t, enum pane p)
{
	static const struct view_ops *const right[] = { &view_log, &view_plan, &view_artifacts,
	    &view_connectors, &view_changes };
	static const struct view_ops *const left[] = { &view_projects, &view_sessions, &view_runs };

	if (p == PANE_RIGHT)
		return right[t->m.right];
	return left[p];
}

unsigned
tui_where(const struct tui *t)
{
	return tui_view(t, t->m.focus)->where;
}

size_t
tui_page_rows(const struct tui *t)
{
	int h = t->box[t->m.focus].h;

	if (t->m.focus == PANE_RIGHT &&
	    (t->m.right == RIGHT_ARTIFACTS || t->m.right == RIGHT_CONNECTORS))
		h--;
	return h > 1 ? (size_t)h : 1;
}

/* The key of an action now (keys.c registers it; the configuration may change keys). */
static const char *(*screen_key)(const char *action, char *buf, size_t len);

void
screen_register_keys(const char *(*key)(const char *action, char *buf, size_t len))
{
	screen_key = key;
}

/* Line 0: " taskdeck  project › session › run" and the right pane's tabs. */
static void
draw_title_line(struct tui *t)
{
	static const char *const names[] = { "Log", "Plan", "Artifacts", "Connectors",
	    "Changes" };
	static const char *const actions[] = { "log", "plan", "artifacts", "connectors",
	    "changes" };
	const struct m_project *p = model_project(&t->m);
	const struct m_session *s = model_session(&t->m);
	const struct m_run *r = model_run(&t->m);
	char crumb[512], id[64], tab[256], tabs[5][64], key[32];
	size_t n = 0;
	int x, tw;

	crumb[0] = tab[0] = '\0';
	if (p != NULL)
		n += (size_t)snprintf(crumb, sizeof crumb, "%s", p->name);
	if (s != NULL && n < sizeof crumb) {
		draw_short_id(t, s->id, id, sizeof id);
		n += (size_t)snprintf(crumb + n, sizeof crumb - n, "%s%.60s", t->g->crumb,
		    s->title != NULL && s->title[0] != '\0' ? s->title : id);
	}
	if (r != NULL && n < sizeof crumb) {
		draw_short_id(t, r->id, id, sizeof id);
		snprintf(crumb + n, sizeof crumb - n, "%s%s", t->g->crumb, id);
	}
	/* Each tab by the key that shows it now (dashboard.conf may give another). */
	for (size_t i = 0; i < 5; i++) {
		const char *k = screen_key != NULL ? screen_key(actions[i], key, sizeof key) : NULL;

		if (screen_key == NULL) {
			snprintf(key, sizeof key, "%zu", i + 1);
			k = key;
		}
		snprintf(tabs[i], sizeof tabs[i], "%s%s%s", k != NULL ? k : "", k != NULL ? " " : "",
		    names[i]);
	}
	n = 0;
	for (size_t i = 0; i < 5; i++) {
		bool on = (size_t)t->m.right == i;

		n += (size_t)snprintf(tab + n, sizeof tab - n, "%s%s%s%s", i ? " " : "",
		    on ? "[" : "", tabs[i], on ? "]" : "");
	}
	draw_fill(0, 0, t->cols, draw_attr(t, ST_BAR));
	x = draw_text(0, 1, t->cols - 1, "taskdeck", A_BOLD) + 3;
	tw = draw_width(tab);
	draw_text(0, x, t->cols - x - tw - 2, crumb, draw_attr(t, ST_BAR));
	if (t->cols - tw - 1 > x)
		draw_text(0, t->cols - tw - 1, tw, tab, draw_attr(t, ST_BAR));
	x = t->cols - tw - 1;
	for (size_t i = 0; i < 5; i++) {
		t->tab_x[i] = x;
		x += draw_width(tabs[i]) + 1 + ((size_t)t->m.right == i ? 2 : 0);
	}
	t->tab_x[5] = x;
}

/* The message line: a download's progress bar, else the last message. */
static void
draw_message(struct tui *t, int y)
{
	const struct model *m = &t->m;
	char size[32], total[32], line[600];
	int x = 1, bw = 20, filled;

	if (m->download_active) {
		x += draw_text(y, x, t->cols - 2, m->download_verifying ?
		    "verifying (sha256) " : "download ", A_NORMAL);
		x += draw_text(y, x, t->cols / 3, m->download_name, A_BOLD) + 1;
		filled = m->download_total > 0 ?
		    (int)(bw * (double)m->download_done / (double)m->download_total) : 0;
		if (filled > bw)
			filled = bw;
		if (x + bw + 2 >= t->cols)
			return;
		mvaddstr(y, x++, "[");
		for (int i = 0; i < bw; i++)
			mvaddstr(y, x++, i < filled ? t->g->bar_full : t->g->bar_empty);
		mvaddstr(y, x++, "]");
		units_format_size(m->download_done, size, sizeof size);
		if (m->download_total >= 0) {
			units_format_size(m->download_total, total, sizeof total);
			snprintf(line, sizeof line, " %3d%%  %s / %s", m->download_total > 0 ?
			    (int)(100.0 * (double)m->download_done / (double)m->download_total) :
			    100, size, total);
		} else
			snprintf(line, sizeof line, " %s", size);
		draw_text(y, x, t->cols - x - 1, line, A_NORMAL);
		return;
	}
	if (m->message[0] != '\0' && t->now_ms < m->message_until_ms)
		draw_text(y, 1, t->cols - 2, m->message,
		    draw_attr(t, m->message_error ? ST_ERROR : ST_NORMAL));
}

struct hint {
	const char *action;
	const char *key;	/* the default key */
	const char *text;
};

/* "Enter open  n new run  ? help" with the keys given now. */
static const char *
hints_text(const struct hint *h, const char *prefix, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s", prefix);
	char key[32];

	for (; h->action != NULL && n < len; h++) {
		const char *k = screen_key != NULL ? screen_key(h->action, key, sizeof key) : h->key;

		if (k == NULL)
			continue;	/* no key: nothing to hint */
		n += (size_t)snprintf(buf + n, len - n, "%s%s %s", n > 0 ? "  " : "", k, h->text);
	}
	return buf;
}

/* True when the selected run has ended (c has nothing to cancel). */
static bool
screen_run_ended(const struct model *m)
{
	const struct m_run *r = model_run(m);

	return r != NULL && r->status != NULL && (strcmp(r->status, "completed") == 0 ||
	    strcmp(r->status, "failed") == 0 || strcmp(r->status, "cancelled") == 0);
}

/* The keys of the focused pane, for the status bar; in the Log with a
 * search, where it stands ("match 3/17") first. */
static const char *
draw_hints(const struct model *m, char *buf, size_t len)
{
	static const struct hint projects[] = { { "open", "Enter", "open" },
	    { "new-run", "n", "new run" }, { "help", "?", "help" }, { NULL, NULL, NULL } };
	static const struct hint sessions[] = { { "open", "Enter", "open" },
	    { "continue", "N", "continue" }, { "help", "?", "help" }, { NULL, NULL, NULL } };
	static const struct hint runs[] = { { "open", "Enter", "log" },
	    { "cancel", "c", "cancel" }, { "detail", "i", "detail" },
	    { "mark", "Space", "mark" }, { "rerun", ".", "rerun" }, { "help", "?", "help" },
	    { NULL, NULL, NULL } };
	static const struct hint ended[] = { { "open", "Enter", "log" },
	    { "detail", "i", "detail" }, { "mark", "Space", "mark" }, { "rerun", ".", "rerun" },
	    { "help", "?", "help" }, { NULL, NULL, NULL } };
	static const struct hint log[] = { { "search", "/", "search" },
	    { "log-filter", "&", "filter" }, { "follow", "f", "follow" },
	    { "scope", "s", "scope" }, { "help", "?", "help" }, { NULL, NULL, NULL } };
	static const struct hint found[] = { { "search-next", "n", "next" },
	    { "search-previous", "N", "previous" }, { "help", "?", "help" },
	    { NULL, NULL, NULL } };
	static const struct hint plan[] = { { "approve", "a", "approve" },
	    { "revise", "e", "revise" }, { "reject", "x", "reject" }, { "help", "?", "help" },
	    { NULL, NULL, NULL } };
	static const struct hint idle_plan[] = { { "log", "1", "log" },
	    { "artifacts", "3", "artifacts" }, { "help", "?", "help" }, { NULL, NULL, NULL } };
	static const struct hint artifacts[] = { { "download", "Enter", "download" },
	    { "view", "v", "view" },
	    { "help", "?", "help" }, { NULL, NULL, NULL } };
	static const struct hint connectors[] = { { "toggle", "Space", "enable/disable" },
	    { "test", "t", "test" }, { "help", "?", "help" }, { NULL, NULL, NULL } };
	static const struct hint changes[] = { { "down", "j", "file" },
	    { "page-down", "PgDn", "diff" }, { "revert", "R", "revert" }, { "help", "?", "help" },
	    { NULL, NULL, NULL } };
	static const struct hint *const left[] = {
		[PANE_PROJECTS] = projects, [PANE_SESSIONS] = sessions, [PANE_RUNS] = runs,
	};
	static const struct hint *const right[] = {
		[RIGHT_LOG] = log, [RIGHT_PLAN] = plan, [RIGHT_ARTIFACTS] = artifacts,
		[RIGHT_CONNECTORS] = connectors, [RIGHT_CHANGES] = changes,
	};
	char where[48];

	if (m->focus == PANE_RIGHT && m->right == RIGHT_PLAN &&
	    !(m->plan.present && m->plan.status != NULL &&
	    strcmp(m->plan.status, "awaiting-approval") == 0))
		return hints_text(idle_plan, "", buf, len);	/* nothing to decide */
	if (m->focus == PANE_RIGHT && m->right == RIGHT_LOG && m->log.search[0] != '\0') {
		size_t index, total;

		model_log_search_count(m, &index, &total);
		if (index > 0)
			snprintf(where, sizeof where, "match %zu/%zu", index, total);
		else
			snprintf(where, sizeof where, "%zu match%s", total, total == 1 ? "" : "es");
		return hints_text(found, where, buf, len);
	}
	if (m->focus == PANE_RUNS && m->mark_count == 0 && screen_run_ended(m))
		return hints_text(ended, "", buf, len);	/* nothing to cancel */
	return hints_text(m->focus == PANE_RIGHT ? right[m->right] : left[m->focus], "", buf,
	    len);
}

/*
 * The status bar: connection, attention, service and counts, hints.  When
 * the line is short, the service part shrinks (without the version, then
 * only the counts, then nothing) before the hints do; "? help" always stays.
 */
static void
draw_status(struct tui *t, int y)
{
	const struct model *m = &t->m;
	char conn[96], svc[3][160], att[48], hbuf[160], help[48];
	static const struct hint help_only[] = { { "help", "?", "help" }, { NULL, NULL, NULL } };
	const char *hints[2] = { draw_hints(m, hbuf, sizeof hbuf),
	    hints_text(help_only, "", help, sizeof help) };
	size_t running, waiting, need = 0;
	long long left;
	int x, room, cw, aw = 0;
	static const struct {
		int hint, svc;		/* svc 3: none */
	} tries[] = { { 0, 0 }, { 0, 1 }, { 0, 2 }, { 1, 0 }, { 1, 1 }, { 0, 3 }, { 1, 2 },
	    { 1, 3 } };

	switch (m->conn) {
	case CONN_LIVE:
		snprintf(conn, sizeof conn, "%s %s", t->g->conn_live,
		    m->resynced_at_ms > 0 && t->now_ms < m->resynced_at_ms + 5000 ?
		    "live (resynced)" : "live");
		break;
	case CONN_RECONNECTING:
		left = (m->conn_retry_at_ms - t->now_ms + 999) / 1000;
		if (m->conn_problem == PROBLEM_UNAUTHORIZED)
			snprintf(conn, sizeof conn, "%s unauthorized: the token was refused, "
			    "retrying in %lld s", t->g->conn_down, left < 0 ? 0 : left);
		else
			snprintf(conn, sizeof conn, "%s unreachable, reconnecting in %lld s",
			    t->g->conn_down, left < 0 ? 0 : left);
		break;
	default:
		snprintf(conn, sizeof conn, "%s connecting", t->g->conn_down);
		break;
	}
	model_counts(m, &running, &waiting);
	/* Not live: nothing the service said last (ready, counts) is shown. */
	svc[0][0] = svc[1][0] = svc[2][0] = '\0';
	if (m->conn == CONN_LIVE) {
		snprintf(svc[0], sizeof svc[0], "taskdeckd%s%s %s  %zu running %zu waiting",
		    m->service_version != NULL ? " " : "",
		    m->service_version != NULL ? m->service_version : "",
		    m->service_ready ? "ready" : "not ready", running, waiting);
		snprintf(svc[1], sizeof svc[1], "%s  %zu running %zu waiting",
		    m->service_ready ? "ready" : "not ready", running, waiting);
		snprintf(svc[2], sizeof svc[2], "%zu run %zu wait", running, waiting);
		need = model_attention_count(m);
	}
	draw_fill(y, 0, t->cols, draw_attr(t, ST_BAR));
	x = 1 + draw_text(y, 1, t->cols - 2, conn,
	    draw_attr_bar(t, m->conn == CONN_LIVE ? ST_OK : ST_RUNNING));
	x += 2;
	/* Every project's runs that wait for the user, first after the connection. */
	if (need > 0 && x < t->cols - 1) {
		snprintf(att, sizeof att, "%zu need you (@)", need);
		aw = draw_text(y, x, t->cols - x - 1, att, draw_attr_bar(t, ST_ATTENTION));
		x += aw + 2;
	}
	if (m->mark_count > 0 && x < t->cols - 1) {
		snprintf(att, sizeof att, "%zu marked", m->mark_count);
		x += draw_text(y, x, t->cols - x - 1, att, draw_attr(t, ST_ATTENTION)) + 2;
	}
	room = t->cols - 1 - x;
	for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
		int hw = draw_width(hints[tries[i].hint]);
		int sw = tries[i].svc < 3 ? draw_width(svc[tries[i].svc]) : 0;

		if (sw + (sw > 0 ? 2 : 0) + hw > room && i + 1 < sizeof tries / sizeof tries[0])
			continue;
		if (sw > 0)
			draw_text(y, x, sw, svc[tries[i].svc], draw_attr(t, ST_BAR));
		cw = hw < room ? hw : room;
		if (cw > 0)
			draw_text(y, t->cols - cw - 1, cw, hints[tries[i].hint], draw_attr(t, ST_BAR));
		break;
	}
}

/* Computes the boxes for t->rows x t->cols. */
static void
draw_layout(struct tui *t, struct rect *left, struct rect *right, int *sep1, int *sep2)
{
	/* Wide terminals give the lists more (their columns: age, duration, tokens). */
	int left_w = t->cols >= 160 ? t->cols * 2 / 5 : t->cols / 3 > 20 ? t->cols / 3 : 20;
	int body_h = t->rows - 3, inner = body_h - 4;
	int proj = inner / 4 > 2 ? inner / 4 : 2;
	int sess = (inner - proj) / 2, runs = inner - proj - sess;

	*left = (struct rect){ 1, 0, body_h, left_w };
	*right = (struct rect){ 1, left_w, body_h, t->cols - left_w };
	t->box[PANE_PROJECTS] = (struct rect){ 2, 1, proj, left_w - 2 };
	*sep1 = 2 + proj;
	t->box[PANE_SESSIONS] = (struct rect){ *sep1 + 1, 1, sess, left_w - 2 };
	*sep2 = *sep1 + 1 + sess;
	t->box[PANE_RUNS] = (struct rect){ *sep2 + 1, 1, runs, left_w - 2 };
	t->box[PANE_RIGHT] = (struct rect){ 2, left_w + 1, body_h - 2, t->cols - left_w - 2 };
}

/* Draws the whole screen into stdscr (screen_flush sends it). */
void
draw_screen(struct tui *t)
{
	static const char small[] = "terminal too small (60x16 needed)";
	struct rect left, right;
	char title[512];
	int sep1, sep2;

	getmaxyx(stdscr, t->rows, t->cols);
	t->ages_shown = false;
	t->too_small = t->cols < 60 || t->rows < 16;
	t->cur_y = t->cur_x = -1;
	erase();
	if (t->too_small) {
		int w = (int)sizeof small - 1;

		draw_text(t->rows / 2, t->cols > w ? (t->cols - w) / 2 : 0, t->cols, small,
		    A_NORMAL);
	} else {
		draw_layout(t, &left, &right, &sep1, &sep2);
		model_log_search_update(&t->m);	/* the title and the hints show the count */
		draw_title_line(t);
		draw_box(t, &left, NULL, false);
		draw_box(t, &right, NULL, false);
		draw_separator(t, sep1, 0, left.w);
		draw_separator(t, sep2, 0, left.w);
		for (int p = 0; p < PANE__COUNT; p++) {
			const struct view_ops *v = tui_view(t, (enum pane)p);
			int y = (int[]){ left.y, sep1, sep2, right.y }[p];

			title[0] = '\0';
			v->title(t, title, sizeof title);
			draw_title(t, y, t->box[p].x - 1, t->box[p].w + 2, title,
			    t->m.focus == (enum pane)p);
			v->draw(t, &t->box[p]);
		}
		draw_message(t, t->rows - 2);
		draw_status(t, t->rows - 1);
	}
}

/* Sends what was drawn (screen, then modal) to the terminal, with the cursor. */
void
screen_flush(struct tui *t)
{
	if (t->cur_y >= 0) {
		move(t->cur_y, t->cur_x);
		curs_set(1);
	} else
		curs_set(0);
	wnoutrefresh(stdscr);
	doupdate();
}
