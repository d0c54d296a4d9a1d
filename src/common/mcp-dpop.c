/*
 * DPoP for the Streamable HTTP transport (RFC 9449): a client given a DPoP
 * key (the header line "DPoP: KEY" among its headers, which is never sent:
 * jwt.h's one-line key) presents its token with the DPoP scheme and sends a
 * fresh proof of the key with every request (the method, the URL, the
 * token's hash, the server's latest nonce).  A server that answers 401
 * use_dpop_nonce with a DPoP-Nonce gets the request once more with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jwt.h"
#include "log.h"
#include "mcp-int.h"
#include "xalloc.h"

bool
mcp_dpop_take_header(struct mcp_client *c, const char *line)
{
	const char *v = line + 5;

	if (strncasecmp(line, "DPoP:", 5) != 0)
		return false;
	v += strspn(v, " \t");
	if (c->dpop_key != NULL) {
		explicit_bzero(c->dpop_key, strlen(c->dpop_key));
		free(c->dpop_key);
	}
	c->dpop_key = xstrdup(v);
	return true;
}

char *
mcp_dpop_line(const struct mcp_client *c, const char *line, const char **token)
{
	const char *v = line + 14;

	if (c->dpop_key == NULL || strncasecmp(line, "Authorization:", 14) != 0)
		return xstrdup(line);
	v += strspn(v, " \t");
	if (strncasecmp(v, "Bearer ", 7) == 0 || strncasecmp(v, "DPoP ", 5) == 0)
		v += v[0] == 'B' || v[0] == 'b' ? 7 : 5;
	*token = v;
	return xasprintf("Authorization: DPoP %s", v);
}

char *
mcp_dpop_proof_line(const struct mcp_client *c, const char *htm, const char *token)
{
	const char *why = NULL;
	char *proof, *line;

	if (c->dpop_key == NULL)
		return NULL;
	proof = jwt_dpop_proof(c->dpop_key, htm, c->url, token,
	    c->dpop_nonce[0] != '\0' ? c->dpop_nonce : NULL, &why);
	if (proof == NULL) {
		log_warn("mcp: no DPoP proof for a request: %s", why);
		return NULL;
	}
	line = xasprintf("DPoP: %s", proof);
	free(proof);
	return line;
}

void
mcp_dpop_nonce_note(struct mcp_client *c, const char *line, size_t len)
{
	size_t v = 11;

	if (len <= v || strncasecmp(line, "DPoP-Nonce:", 11) != 0)
		return;
	while (v < len && (line[v] == ' ' || line[v] == '\t'))
		v++;
	while (len > v && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' '))
		len--;
	/* A nonce is a token of printable ASCII (RFC 9449 8.1); anything else is not kept. */
	for (size_t i = v; i < len; i++)
		if (line[i] <= ' ' || line[i] > '~' || line[i] == '"')
			return;
	if (len > v && len - v < sizeof c->dpop_nonce)
		snprintf(c->dpop_nonce, sizeof c->dpop_nonce, "%.*s", (int)(len - v), line + v);
}

bool
mcp_dpop_nonce_asked(const struct mcp_client *c, long status, const char *www_auth)
{
	char error[64];

	if (c->dpop_key == NULL || status != 401 || c->dpop_nonce[0] == '\0')
		return false;
	mcp_challenge_param(www_auth, "error", error, sizeof error);
	return strcmp(error, "use_dpop_nonce") == 0;
}
