#include <criterion/criterion.h>

#include "errors.h"

Test(errors, design_table_statuses)
{
	static const struct { enum td_code code; const char *name; int status; } want[] = {
		{ TD_INVALID_REQUEST, "invalid_request", 400 },
		{ TD_INVALID_CWD, "invalid_cwd", 400 },
		{ TD_UNAUTHORIZED, "unauthorized", 401 },
		{ TD_FORBIDDEN, "forbidden", 403 },
		{ TD_NOT_FOUND, "not_found", 404 },
		{ TD_METHOD_NOT_ALLOWED, "method_not_allowed", 405 },
		{ TD_STALE_WRITE, "stale_write", 409 },
		{ TD_STALE_PLAN, "stale_plan", 409 },
		{ TD_PLAN_NOT_PENDING, "plan_not_pending", 409 },
		{ TD_SESSION_BUSY, "session_busy", 409 },
		{ TD_CWD_MISMATCH, "cwd_mismatch", 409 },
		{ TD_PAYLOAD_TOO_LARGE, "payload_too_large", 413 },
		{ TD_IDEMPOTENCY_CONFLICT, "idempotency_conflict", 422 },
		{ TD_INVALID_CONFIGURATION, "invalid_configuration", 422 },
		{ TD_INTERNAL_ERROR, "internal_error", 500 },
		{ TD_IDEMPOTENCY_UNAVAILABLE, "idempotency_unavailable", 503 },
		{ TD_INSUFFICIENT_STORAGE, "insufficient_storage", 507 },
	};

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		cr_expect_str_eq(errcode_name(want[i].code), want[i].name);
		cr_expect_eq(errcode_http_status(want[i].code), want[i].status, "%s", want[i].name);
		cr_expect_eq(errcode_from_name(want[i].name), want[i].code);
	}
}

Test(errors, client_codes_and_unknown_names)
{
	cr_expect_str_eq(errcode_name(TD_EVENT_STREAM_OVERFLOW), "event_stream_overflow");
	cr_expect_str_eq(errcode_name(TD_EVENT_STREAM_INVALID_MESSAGE),
	    "event_stream_invalid_message");
	cr_expect_eq(errcode_http_status(TD_TIMEOUT), 0);
	cr_expect_eq(errcode_from_name("no_such_code"), TD_UNKNOWN);
	cr_expect_eq(errcode_from_name(NULL), TD_UNKNOWN);
	cr_expect_str_eq(errcode_name((enum td_code)9999), "unknown_error");
}

Test(errors, names_are_unique_and_messages_present)
{
	for (int i = 0; i < TD_CODE_COUNT; i++) {
		cr_expect_eq(errcode_from_name(errcode_name((enum td_code)i)), (enum td_code)i);
		cr_expect_gt(strlen(errcode_default_message((enum td_code)i)), 0);
	}
}
