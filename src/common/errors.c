#include <string.h>

#include "errors.h"

struct code_info {
	const char *name;
	int status;
	const char *message;
};

static const struct code_info codes[TD_CODE_COUNT] = {
#define TD_ERROR_INFO(n, code, status, message) [TD_##n] = { code, status, message },
	TD_ERROR_LIST(TD_ERROR_INFO)
#undef TD_ERROR_INFO
};

const char *
errcode_name(enum td_code code)
{
	if ((unsigned)code >= TD_CODE_COUNT)
		return codes[TD_UNKNOWN].name;
	return codes[code].name;
}

int
errcode_http_status(enum td_code code)
{
	if ((unsigned)code >= TD_CODE_COUNT)
		return 500;
	return codes[code].status;
}

const char *
errcode_default_message(enum td_code code)
{
	if ((unsigned)code >= TD_CODE_COUNT)
		return codes[TD_UNKNOWN].message;
	return codes[code].message;
}

enum td_code
errcode_from_name(const char *name)
{
	if (name == NULL)
		return TD_UNKNOWN;
	for (int i = 0; i < TD_CODE_COUNT; i++) {
		if (strcmp(codes[i].name, name) == 0)
			return (enum td_code)i;
	}
	return TD_UNKNOWN;
}
