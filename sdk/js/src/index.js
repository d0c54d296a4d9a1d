// @taskdeck/sdk for import: the same objects as require() gives (src/index.cjs),
// so that one program mixing both has one TaskdeckError class.
import sdk from './index.cjs';

export const {
  connectToTaskdeck, TaskdeckClient, ApiPromise, VERSION, DEFAULT_REQUEST_TIMEOUT_MS,
  TaskdeckError, BadRequestError, AuthenticationError, PermissionDeniedError, NotFoundError,
  ConflictError, RateLimitError, InternalServerError, ConnectionError, TimeoutError, AbortError,
  EventStreamError, DEFAULT_MAX_RETRIES, EVENT_BACKLOG, DEFAULT_IDLE_TIMEOUT_MS,
} = sdk;
