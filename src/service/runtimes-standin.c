/*
 * STAND-IN for the readiness branch's runtimes.c (issue 16), so that this branch
 * builds and its tests run before that is merged: same API (runtimes.h).  Delete
 * this file and its Makefile.am line when merging readiness.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtimes.h"
const char *runtime_status_name(enum runtime_status s)
{
	static const char *const n[] = { "ready", "missing", "broken", "outdated" };
	return n[s];
}
int runtimes_probe(const struct service *svc, const char *framework, struct runtime_info *out)
{
	const char *prog = strcmp(framework, "claude-code") == 0 ? "claude" : "codex";
	int minor_min = strcmp(prog, "claude") == 0 ? 2 : 0, min2 = strcmp(prog, "claude") == 0 ? 0 : 40;
	char *path = strdup(getenv("PATH") ? getenv("PATH") : ""), *save, *dir, cmd[5000], line[256];
	FILE *f; int a, b, c;
	(void)svc;
	memset(out, 0, sizeof *out);
	snprintf(out->framework, sizeof out->framework, "%s", framework);
	snprintf(out->source, sizeof out->source, "external");
	out->status = RUNTIME_MISSING;
	snprintf(out->message, sizeof out->message, "%s is not on PATH", prog);
	for (dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out->path, sizeof out->path, "%s/%s", dir, prog);
		if (access(out->path, X_OK) == 0)
			break;
		out->path[0] = '\0';
	}
	free(path);
	if (out->path[0] == '\0')
		return 0;
	snprintf(cmd, sizeof cmd, "'%s' --version 2>/dev/null", out->path);
	f = popen(cmd, "r");
	out->status = RUNTIME_BROKEN;
	snprintf(out->message, sizeof out->message, "%s --version failed", prog);
	if (f && fgets(line, sizeof line, f)) {
		char *p = line + strcspn(line, "0123456789");
		if (sscanf(p, "%d.%d.%d", &a, &b, &c) == 3) {
			snprintf(out->version, sizeof out->version, "%d.%d.%d", a, b, c);
			out->status = (a > minor_min || (a == minor_min && b >= min2)) ? RUNTIME_READY : RUNTIME_OUTDATED;
			snprintf(out->message, sizeof out->message, "%s %s", prog, out->status == RUNTIME_READY ? "is ready" : "is below the minimum");
		}
	}
	if (f) pclose(f);
	return 0;
}
