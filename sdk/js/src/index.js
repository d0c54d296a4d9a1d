export {
  connectToTaskdeck, TaskdeckClient, ApiPromise, VERSION, DEFAULT_REQUEST_TIMEOUT_MS,
} from './client.js';
export {
  TaskdeckError, BadRequestError, AuthenticationError, PermissionDeniedError, NotFoundError,
  ConflictError, RateLimitError, InternalServerError, ConnectionError, TimeoutError, AbortError,
  EventStreamError,
} from './errors.js';
export { DEFAULT_MAX_RETRIES } from './transport.js';
export { EVENT_BACKLOG, DEFAULT_IDLE_TIMEOUT_MS } from './events.js';
