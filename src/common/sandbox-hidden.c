/*
 * What no sandbox may read (sandbox.h, docs/agent.md "The sandbox"): taskdeck's
 * own files, the user's credentials and the sockets that reach past the user.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "paths.h"
#include "sandbox.h"
#include "xalloc.h"

/* Credential locations under $HOME that no sandbox may read (docs/agent.md). */
static const char *const home_secrets[] = {
	".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
	".npmrc", ".pypirc", ".pgpass", ".password-store", ".config/gcloud", ".config/gh",
	".config/hub", ".config/op", ".local/share/keyrings", ".mozilla", ".config/google-chrome",
	".config/chromium", ".terraform.d", ".vault-token",
	/* the logins of the framework CLIs (docs/frameworks.md) */
	".claude", ".claude.json", ".codex", NULL,
};

/*
 * Sockets that hand out more than the user's rights or reach the user's session
 * (a read-only mount does not stop connect()): container engines, the system bus,
 * and the user's runtime directory (agents of ssh and gpg, the session bus).
 */
static const char *const system_secrets[] = {
	"/run/docker.sock", "/var/run/docker.sock", "/run/containerd", "/run/podman",
	"/run/dbus", "/run/systemd/private", NULL,
};

static size_t
hidden_len(char **list)
{
	size_t n = 0;

	while (list != NULL && list[n] != NULL)
		n++;
	return n;
}

char **
sandbox_hidden_add(char **list, const char *path)
{
	char real[PATH_MAX];
	size_t n = hidden_len(list);

	if (path == NULL || realpath(path, real) == NULL || strcmp(real, "/") == 0)
		return list;
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], real) == 0)
			return list;
	list = xrealloc(list, (n + 2) * sizeof *list);
	list[n] = xstrdup(real);
	list[n + 1] = NULL;
	return list;
}

char **
sandbox_hidden_paths(const struct td_paths *p, const char *home)
{
	char **list = xcalloc(1, sizeof *list);

	if (home == NULL)
		home = getenv("HOME");
	if (p != NULL) {
		const char *const mine[] = { p->config_dir, p->data_dir, p->runtime_dir,
			p->token, p->settings, p->database, p->secret_key, p->workspaces,
			p->artifacts, p->discovery, p->lock, p->socket, p->log };

		for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
			list = sandbox_hidden_add(list, mine[i]);
	}
	for (const char *const *s = system_secrets; *s; s++)
		list = sandbox_hidden_add(list, *s);
	if (getenv("XDG_RUNTIME_DIR") != NULL && getenv("XDG_RUNTIME_DIR")[0] == '/')
		list = sandbox_hidden_add(list, getenv("XDG_RUNTIME_DIR"));
	if (home != NULL && home[0] == '/')
		for (const char *const *s = home_secrets; *s; s++) {
			char *path = xasprintf("%s/%s", home, *s);

			list = sandbox_hidden_add(list, path);
			free(path);
		}
	return list;
}

void
sandbox_hidden_free(char **list)
{
	for (size_t i = 0; list != NULL && list[i] != NULL; i++)
		free(list[i]);
	free(list);
}
