/*
 * The dashboard's configuration file: $XDG_CONFIG_HOME/taskdeck/dashboard.conf
 * (else ~/.config/taskdeck/dashboard.conf), lines "name = value", '#'
 * comments: on/off settings, key.ACTION = KEY (keys.c) and
 * color.ELEMENT = FG[,BG] (draw.c).  Unknown names and bad values are
 * ignored and reported on stderr, and the first of them (with how many)
 * on the dashboard's status line, where they are seen.
 */
#include <stdarg.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/tui.h"

/* "on"/"off" (also true/false, yes/no, 1/0) into *out; false when neither. */
static bool
config_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "on", "true", "yes", "1" };
	static const char *const no[] = { "off", "false", "no", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (strcmp(v, yes[i]) == 0 || strcmp(v, no[i]) == 0) {
			*out = strcmp(v, yes[i]) == 0;
			return true;
		}
	}
	return false;
}

static char *
config_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* One problem of line n: on stderr, and the first one kept for the screen. */
static void __attribute__((format(printf, 4, 5)))
config_problem(struct tui_options *o, const char *path, int n, const char *fmt, ...)
{
	const char *base = strrchr(path, '/');
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	fprintf(stderr, "taskdeck: %s:%d: %s\n", path, n, text);
	if (o->config_problems++ == 0)
		snprintf(o->config_problem, sizeof o->config_problem, "%s:%d: %s",
		    base != NULL ? base + 1 : path, n, text);
}

void
tui_config_load(struct tui_options *o)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char path[4096], line[512], why[256];
	FILE *fp;
	int n = 0;

	if (xdg != NULL && xdg[0] == '/')
		snprintf(path, sizeof path, "%s/taskdeck/dashboard.conf", xdg);
	else if (home != NULL && home[0] == '/')
		snprintf(path, sizeof path, "%s/.config/taskdeck/dashboard.conf", home);
	else
		return;
	if ((fp = fopen(path, "re")) == NULL)
		return;
	while (fgets(line, sizeof line, fp) != NULL && n++ < 1000) {
		char *eq, *name, *value, *hash = strchr(line, '#');
		bool *target = NULL;

		if (hash != NULL)
			*hash = '\0';
		name = config_trim(line);
		if (*name == '\0')
			continue;
		if ((eq = strchr(name, '=')) == NULL) {
			config_problem(o, path, n, "expected name = value");
			continue;
		}
		*eq = '\0';
		value = config_trim(eq + 1);
		name = config_trim(name);
		if (strncmp(name, "key.", 4) == 0) {
			int key = keys_parse(value);

			if (key < 0)
				config_problem(o, path, n, "%s: '%s' is not a key (a character, "
				    "Ctrl-X, F1-F12, Space, Tab, Enter, Up, PgUp, ...)", name, value);
			else if (!keys_bind(name + 4, key, why, sizeof why) || why[0] != '\0')
				config_problem(o, path, n, "%s: %s", name, why);
			continue;
		}
		if (strncmp(name, "color.", 6) == 0 || strncmp(name, "colour.", 7) == 0) {
			if (!draw_color_set(strchr(name, '.') + 1, value, why, sizeof why))
				config_problem(o, path, n, "%s: %s", name, why);
			continue;
		}
		if (strcmp(name, "bell") == 0)
			target = &o->bell;
		else if (strcmp(name, "title") == 0)
			target = &o->title;
		else if (strcmp(name, "mouse") == 0) {
			bool on;

			if (config_bool(value, &on))
				o->no_mouse = o->no_mouse || !on;
			else
				config_problem(o, path, n, "mouse: on or off");
			continue;
		} else {
			config_problem(o, path, n, "unknown setting '%s'", name);
			continue;
		}
		if (!config_bool(value, target))
			config_problem(o, path, n, "%s: on or off", name);
	}
	fclose(fp);
}
