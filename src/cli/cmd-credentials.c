/*
 * taskdeck credentials list|show|create|update|delete
 *
 * A secret never comes from argv (other users see it in /proc): it is read
 * from the terminal with echo off, or from standard input with --secret-stdin.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"

/* As the service's bound (CREDENTIAL_SECRET_MAX). */
#define SECRET_MAX 16384

static int cmd_credentials_list_exec(struct cli *, int, char **);
static int cmd_credentials_show_exec(struct cli *, int, char **);
static int cmd_credentials_create_exec(struct cli *, int, char **);
static int cmd_credentials_update_exec(struct cli *, int, char **);
static int cmd_credentials_delete_exec(struct cli *, int, char **);

static const struct cli_option create_options[] = {
	{ "kind", true },
	{ "description", true },
	{ "secret-stdin", false },
	{ NULL, false }
};

static const struct cli_option update_options[] = {
	{ "name", true },
	{ "kind", true },
	{ "description", true },
	{ "secret-stdin", false },
	{ "rotate", false },
	{ NULL, false }
};

static const struct cli_option delete_options[] = {
	{ "force", false },
	{ NULL, false }
};

const struct cli_cmd cmd_credentials_list_entry = {
	"credentials", "list", "[--limit N] [--cursor CURSOR]",
	"List stored credentials (never their secrets).",
	cli_page_options, 0, 0, cmd_credentials_list_exec
};

const struct cli_cmd cmd_credentials_show_entry = {
	"credentials", "show", "ID",
	"Show one credential's metadata.",
	cli_no_options, 1, 1, cmd_credentials_show_exec
};

const struct cli_cmd cmd_credentials_create_entry = {
	"credentials", "create",
	"NAME [--kind api-key|bearer|basic|secret] [--description TEXT] [--secret-stdin]",
	"Store a secret for connectors to use.  It is asked for on the terminal\n"
	"(not echoed), or read from standard input with --secret-stdin; kind basic\n"
	"takes user:password.  The kind defaults to secret.",
	create_options, 1, 1, cmd_credentials_create_exec
};

const struct cli_cmd cmd_credentials_update_entry = {
	"credentials", "update",
	"ID [--name NAME] [--kind KIND] [--description TEXT] [--rotate | --secret-stdin]",
	"Change a credential.  --rotate asks for a new secret on the terminal;\n"
	"--secret-stdin reads it from standard input.",
	update_options, 1, 1, cmd_credentials_update_exec
};

const struct cli_cmd cmd_credentials_delete_entry = {
	"credentials", "delete", "ID [--force]",
	"Delete a credential.  While a connector binds it this fails (exit 5)\n"
	"unless --force, which removes those bindings too.",
	delete_options, 1, 1, cmd_credentials_delete_exec
};

static void
credential_print(const struct cli *cli, const struct td_credential *c)
{
	if (cli->json) {
		out_json(c->json);
		return;
	}
	out_kv("id", c->id);
	out_kv("name", c->name);
	out_kv("kind", c->kind);
	out_kv("description", c->description);
	out_kv("createdAt", c->created_at);
	out_kv("updatedAt", c->updated_at);
}

/* Wipes and frees a secret. */
static void
secret_free(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

/* Reads all of fd (at most SECRET_MAX bytes) without the final line break; NULL on error. */
char *
cli_secret_read_fd(int fd, const char **why)
{
	char *s = malloc(SECRET_MAX + 2);
	size_t len = 0;
	ssize_t n;

	if (s == NULL)
		abort();
	while (len <= SECRET_MAX && (n = read(fd, s + len, SECRET_MAX + 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*why = "cannot read the secret";
			secret_free(s);
			return NULL;
		}
		len += (size_t)n;
	}
	s[len] = '\0';
	if (len > 0 && s[len - 1] == '\n')
		s[--len] = '\0';
	if (len > 0 && s[len - 1] == '\r')
		s[--len] = '\0';
	if (len > SECRET_MAX) {
		*why = "the secret is longer than 16384 bytes";
	} else if (len == 0 || memchr(s, '\0', len) != NULL) {
		*why = len == 0 ? "the secret is empty" : "the secret holds a NUL byte";
	} else {
		return s;
	}
	explicit_bzero(s, SECRET_MAX + 2);
	free(s);
	return NULL;
}

/* One line from the terminal with echo off. */
static char *
secret_read_tty(const char *prompt, const char **why)
{
	struct termios old, quiet;
	struct buf b;
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
	char c;
	ssize_t n;

	if (fd < 0 || tcgetattr(fd, &old) != 0) {
		if (fd >= 0)
			close(fd);
		*why = "no terminal to ask for the secret; pipe it in with --secret-stdin";
		return NULL;
	}
	if (write(fd, prompt, strlen(prompt)) < 0) {
		/* The prompt is a courtesy; reading still works. */
	}
	quiet = old;
	quiet.c_lflag &= (tcflag_t)~(ECHO | ECHONL);
	quiet.c_lflag |= ICANON;
	tcsetattr(fd, TCSAFLUSH, &quiet);
	buf_init(&b, SECRET_MAX + 1);
	while ((n = read(fd, &c, 1)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || c == '\n' || !buf_append(&b, &c, 1))
			break;
	}
	tcsetattr(fd, TCSAFLUSH, &old);
	if (write(fd, "\n", 1) < 0) {
		/* as above */
	}
	close(fd);
	c = 0;
	if (b.len == 0 || b.len > SECRET_MAX) {
		*why = b.len == 0 ? "the secret is empty" : "the secret is too long";
		if (b.data != NULL)
			explicit_bzero(b.data, b.len);
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

/* The secret from --secret-stdin or the terminal; NULL after printing why. */
static char *
secret_get(struct cli *cli, const char *prompt)
{
	const char *why = NULL;
	char *s = cli_has(cli, "secret-stdin") ? cli_secret_read_fd(STDIN_FILENO, &why) :
	    secret_read_tty(prompt, &why);

	if (s == NULL)
		cli_usage_error(cli, "%s", why);
	return s;
}

static int
cmd_credentials_list_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "ID", "NAME", "KIND", "UPDATED", "DESCRIPTION" };
	struct td_credential_list *page;
	struct cli_list l;
	struct td_error err;
	bool more;
	int rc;

	(void)argc;
	(void)argv;
	if ((rc = cli_list_start(cli, &l, 5, header)) != CLI_EXIT_OK)
		return rc;
	do {
		if (td_list_credentials(cli->client, l.limit, cli_list_cursor(&l), &l.opts,
		    &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		for (size_t i = 0; i < page->count; i++) {
			const struct td_credential *c = &page->items[i];
			const char *row[] = { c->id, c->name, c->kind, c->updated_at,
				c->description };

			cli_list_add(&l, c->json, row);
		}
		more = cli_list_next(&l, &page->next_cursor);
		td_credential_list_free(page);
	} while (more);
	return cli_list_end(cli, &l, "credentials");
}

static int
cmd_credentials_show_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_credential *c;
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_credential(cli->client, argv[0], &opts, &c, &err) != TD_OK)
		return cli_fail(&err);
	credential_print(cli, c);
	td_credential_free(c);
	return CLI_EXIT_OK;
}

/* Creates (id NULL) or updates credential id, prints it, frees secret; an exit code. */
static int
credentials_send(struct cli *cli, const char *id, const struct td_credential_request *req,
    char *secret)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_credential *c = NULL;
	struct td_error err;
	enum td_code code;
	int rc;

	if ((rc = cli_connect(cli)) == CLI_EXIT_OK) {
		code = id == NULL ? td_create_credential(cli->client, req, &opts, &c, &err) :
		    td_update_credential(cli->client, id, req, &opts, &c, &err);
		if (code != TD_OK)
			rc = cli_fail(&err);
		else
			credential_print(cli, c);
	}
	secret_free(secret);
	td_credential_free(c);
	return rc;
}

static int
cmd_credentials_create_exec(struct cli *cli, int argc, char **argv)
{
	struct td_credential_request req = {
		.name = argv[0],
		.kind = cli_get(cli, "kind"),
		.description = cli_get(cli, "description"),
	};
	char *secret;

	(void)argc;
	if ((secret = secret_get(cli, "Secret: ")) == NULL)
		return CLI_EXIT_USAGE;
	req.secret = secret;
	return credentials_send(cli, NULL, &req, secret);
}

static int
cmd_credentials_update_exec(struct cli *cli, int argc, char **argv)
{
	struct td_credential_request req = {
		.name = cli_get(cli, "name"),
		.kind = cli_get(cli, "kind"),
		.description = cli_get(cli, "description"),
	};
	char *secret = NULL;

	(void)argc;
	if (cli_has(cli, "rotate") && cli_has(cli, "secret-stdin"))
		return cli_usage_error(cli, "--rotate and --secret-stdin do not go together");
	if (cli_has(cli, "rotate") || cli_has(cli, "secret-stdin")) {
		if ((secret = secret_get(cli, "New secret: ")) == NULL)
			return CLI_EXIT_USAGE;
		req.secret = secret;
	}
	return credentials_send(cli, argv[0], &req, secret);
}

static int
cmd_credentials_delete_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_delete_credential(cli->client, argv[0], cli_has(cli, "force"), &opts,
	    &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json)
		out_json("{}");
	else
		printf("deleted %s\n", argv[0]);
	return CLI_EXIT_OK;
}
