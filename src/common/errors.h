/* Lookups over the shared error list (td-errors.h). */
#ifndef TD_COMMON_ERRORS_H
#define TD_COMMON_ERRORS_H

#include "td-errors.h"

const char *errcode_name(enum td_code code);
int errcode_http_status(enum td_code code);
const char *errcode_default_message(enum td_code code);
/* TD_UNKNOWN when name is NULL or not in the list. */
enum td_code errcode_from_name(const char *name);

#endif
