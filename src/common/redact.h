/*
 * Masking secrets in text (docs/connectors.md, "Secrets in what a server
 * says"): the values of the credentials bound to connectors, in every plain
 * form a server may echo them in, are replaced with '*' in whatever text of
 * a connector leaves the process (messages, events, logs, the model's
 * context); the agent masks its providers' API keys with it too.  The one
 * masking function of the agent and the service.
 */
#ifndef TD_COMMON_REDACT_H
#define TD_COMMON_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Derived forms shorter than this are not masked (the whole value always is). */
#define REDACT_MIN_PART 4

struct redact;

/* An empty set; redact_free wipes the copies it holds. */
struct redact *redact_new(void);
void redact_free(struct redact *r);
/*
 * Adds a resolved value and the forms a server may echo it in: the value;
 * for "<scheme> <credentials>" (a header value: "Bearer t", "Basic b64") the
 * credentials; for Basic their decoded "user:password" and the password.
 */
void redact_add(struct redact *r, const char *value);
bool redact_empty(const struct redact *r);

/* Text of len bytes was cut before its start / after its end. */
#define REDACT_CUT_START 1u
#define REDACT_CUT_END 2u
/*
 * Masks every occurrence of every form in s[0..len) with '*' (same length,
 * in place), longest first.  At a cut edge, the part of a form the cut left
 * (a suffix at the start, a prefix at the end) is masked too.  NULL r or s:
 * nothing.
 */
void redact_text(const struct redact *r, char *s, size_t len, unsigned cuts);
/* redact_text over a whole string. */
void redact_str(const struct redact *r, char *s);
/* redact_str over every string value and member name under item. */
void redact_json(const struct redact *r, cJSON *item);

#endif
