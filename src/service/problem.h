/*
 * A refusal, as a domain module finds it and a route answers it: the code
 * of the one error list (td-errors.h), the field it concerns, a message for
 * a person and extra details.  http_problem (http.h) answers it in one call.
 */
#ifndef TD_SERVICE_PROBLEM_H
#define TD_SERVICE_PROBLEM_H

#include <cjson/cJSON.h>

#include "errors.h"

struct problem {
	enum td_code code;
	char field[64];		/* the member or resource it concerns, "" for none */
	char message[768];
	cJSON *details;		/* extra details, or NULL; answered (or freed) with it */
};

/* Fills p (field may be NULL) and returns code. */
enum td_code problem_set(struct problem *p, enum td_code code, const char *field,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Fills p with not_found for the resource (a kind, "run") of that id. */
enum td_code problem_not_found(struct problem *p, const char *resource, const char *id);

#endif
