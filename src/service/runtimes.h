/*
 * Agent frameworks and where their runtimes are (DESIGN.md section 14):
 * the managed taskdeck-agent and the external claude-code and codex CLIs.
 */
#ifndef TD_SERVICE_RUNTIMES_H
#define TD_SERVICE_RUNTIMES_H

#include <stdbool.h>

struct service;

enum runtime_status { RUNTIME_READY, RUNTIME_MISSING, RUNTIME_BROKEN, RUNTIME_OUTDATED };

struct runtime_info {
	char framework[32];        /* "taskdeck", "claude-code", "codex" */
	enum runtime_status status;
	char version[64];          /* "" when unknown */
	char source[16];           /* "managed" | "external" */
	char path[4096];           /* "" when missing */
	char message[256];         /* why, for people */
	char found_by[32];         /* "settings", "PATH", "TASKDECK_AGENT", "build tree", "installed" */
	bool data_complete;        /* taskdeck: replay transcripts present (else true) */
};

/* The frameworks in the order GET /runtimes lists them, NULL-terminated. */
extern const char *const runtimes_frameworks[];

const char *runtime_status_name(enum runtime_status s);
/* The oldest version that works, "major.minor.patch", or NULL for the managed one. */
const char *runtimes_min_version(const char *framework);

/*
 * Probes one framework (runs `<cli> --version` with a short timeout for external ones;
 * a configured path in settings wins over PATH).  Returns 0, or -1 for an unknown
 * framework.  A probe is cached for a short while, keyed by the binary's inode,
 * size and times, so that a changed or re-installed binary is seen at once.
 */
int runtimes_probe(const struct service *svc, const char *framework, struct runtime_info *out);

/* Forgets every cached probe (after a repair). */
void runtimes_forget(void);

/*
 * Compares two dotted versions numerically ("2.0.10" > "2.0.9"); missing parts
 * count as 0.  <0, 0 or >0.
 */
int runtimes_version_cmp(const char *a, const char *b);

/*
 * Where the managed runtime is.  An uninstalled build (the binary runs from the
 * build directory recorded at configure time) uses the agent beside it and the
 * source tree's data/replay; an installed one the installed paths.
 * TASKDECK_AGENT and TASKDECK_REPLAY_DIR override both.  *found_by names the
 * source ("TASKDECK_AGENT", "build tree", "installed").  The caller frees.
 */
char *runtimes_find_agent(const char **found_by);
char *runtimes_find_replay_dir(const char **found_by);
/* The same without the environment overrides: what bootstrap repairs from. */
char *runtimes_default_agent(const char **found_by);
char *runtimes_default_replay_dir(const char **found_by);
/* true when the running binary is in the build directory recorded at configure time. */
bool runtimes_in_build_tree(void);
/* The number of *.json transcripts in dir (0 when it cannot be read). */
int runtimes_count_transcripts(const char *dir);

#endif
