/*
 * The one list of taskdeck error codes, shared by the service (which sends
 * them) and the client core (which maps them back).  Installed beside
 * taskdeck.h, which includes it.
 *
 * TD_ERROR(NAME, "wire_code", http_status, "default message")
 * An http_status of 0 marks a code that only the client core produces.
 */
#ifndef TASKDECK_ERRORS_H
#define TASKDECK_ERRORS_H

#define TD_ERROR_LIST(TD_ERROR) \
	TD_ERROR(OK, "ok", 200, "Success.") \
	TD_ERROR(INVALID_REQUEST, "invalid_request", 400, "The request is malformed.") \
	TD_ERROR(INVALID_CWD, "invalid_cwd", 400, "The working directory is not usable.") \
	TD_ERROR(UNAUTHORIZED, "unauthorized", 401, "A valid bearer token is required.") \
	TD_ERROR(FORBIDDEN, "forbidden", 403, "The request is not allowed.") \
	TD_ERROR(NOT_FOUND, "not_found", 404, "The resource does not exist.") \
	TD_ERROR(METHOD_NOT_ALLOWED, "method_not_allowed", 405, "The method is not allowed on this resource.") \
	TD_ERROR(STALE_WRITE, "stale_write", 409, "The resource changed since it was read; re-read it and write again.") \
	TD_ERROR(STALE_PLAN, "stale_plan", 409, "The plan changed since it was read.") \
	TD_ERROR(PLAN_NOT_PENDING, "plan_not_pending", 409, "No plan is awaiting a decision.") \
	TD_ERROR(PERMISSION_NOT_PENDING, "permission_not_pending", 409, "The permission prompt was already answered.") \
	TD_ERROR(SESSION_BUSY, "session_busy", 409, "A run is already active in this session.") \
	TD_ERROR(CWD_MISMATCH, "cwd_mismatch", 409, "The working directory does not match the session's directory.") \
	TD_ERROR(CREDENTIAL_IN_USE, "credential_in_use", 409, "A connector binds this credential.") \
	TD_ERROR(RUN_ACTIVE, "run_active", 409, "The run has not ended yet.") \
	TD_ERROR(REVERT_CONFLICT, "revert_conflict", 409, "Files the run changed were changed since; revert with force to put them back anyway.") \
	TD_ERROR(WORKSPACE_REPLACED, "workspace_replaced", 409, "The session's directory is not the one its first snapshot read (it was moved, or a link or another directory is at its path); nothing was read or written there.") \
	TD_ERROR(ATTEMPT_CONFLICT, "attempt_conflict", 409, "The attempt's changes do not apply to the directory as it is now; nothing was changed.") \
	TD_ERROR(ATTEMPT_GROUP_CLOSED, "attempt_group_closed", 409, "The attempts were applied or discarded already.") \
	TD_ERROR(PAYLOAD_TOO_LARGE, "payload_too_large", 413, "The request body is too large.") \
	TD_ERROR(URI_TOO_LONG, "uri_too_long", 414, "The URL has too many query arguments.") \
	TD_ERROR(IDEMPOTENCY_CONFLICT, "idempotency_conflict", 422, "The idempotency key was already used with a different request.") \
	TD_ERROR(INVALID_CONFIGURATION, "invalid_configuration", 422, "The configuration is not valid.") \
	TD_ERROR(PERMISSION_DENIED, "permission_denied", 403, "The service may not change the file or directory.") \
	TD_ERROR(CONFIGURATION_CONFLICT, "configuration_conflict", 409, "A file that taskdeck did not write is in the way; it was left untouched.") \
	TD_ERROR(RUNTIME_MISSING, "runtime_missing", 503, "The agent runtime is missing and cannot be restored here.") \
	TD_ERROR(INTERNAL_ERROR, "internal_error", 500, "An internal error occurred.") \
	TD_ERROR(IDEMPOTENCY_UNAVAILABLE, "idempotency_unavailable", 503, "The idempotency registry is full; retry later.") \
	TD_ERROR(UNAVAILABLE, "service_unavailable", 503, "The service is shutting down.") \
	TD_ERROR(PROVIDER_UNAVAILABLE, "provider_unavailable", 502, "The model provider could not be reached or did not list its models.") \
	TD_ERROR(SANDBOX_UNAVAILABLE, "sandbox_unavailable", 503, "The command sandbox cannot be set up here; see taskdeck doctor.") \
	TD_ERROR(TIMEOUT, "timeout", 0, "The request deadline passed.") \
	TD_ERROR(CANCELLED, "cancelled", 0, "The request was cancelled.") \
	TD_ERROR(CONNECTION_FAILED, "connection_failed", 0, "Could not reach the taskdeck service.") \
	TD_ERROR(SERVICE_NOT_FOUND, "service_not_found", 0, "No running taskdeck service was found.") \
	TD_ERROR(INVALID_RESPONSE, "invalid_response", 0, "The service sent a response that could not be understood.") \
	TD_ERROR(INVALID_ARGUMENT, "invalid_argument", 0, "An argument is missing or invalid.") \
	TD_ERROR(IO_ERROR, "io_error", 0, "A local file operation failed.") \
	TD_ERROR(EVENT_STREAM_OVERFLOW, "event_stream_overflow", 0, "The event backlog exceeded 1024 events.") \
	TD_ERROR(EVENT_STREAM_INVALID_MESSAGE, "event_stream_invalid_message", 0, "The event stream sent a malformed frame.") \
	TD_ERROR(EVENT_STREAM_IDLE_TIMEOUT, "event_stream_idle_timeout", 0, "No event or heartbeat arrived in time.") \
	TD_ERROR(UNKNOWN, "unknown_error", 0, "The service returned an unknown error code.") \
	/* a write failed for want of space (SQLITE_FULL, ENOSPC, EDQUOT) */ \
	TD_ERROR(INSUFFICIENT_STORAGE, "insufficient_storage", 507, "The disk under taskdeck's data directory is full; nothing was changed. Free space and retry.")

enum td_code {
#define TD_ERROR_ENUM(name, code, status, message) TD_##name,
	TD_ERROR_LIST(TD_ERROR_ENUM)
#undef TD_ERROR_ENUM
	TD_CODE_COUNT
};

#endif
