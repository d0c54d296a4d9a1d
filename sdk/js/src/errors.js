// TaskdeckError: the one error class of the SDK.

const STATUS_CODES = new Map([
  [400, 'invalid_request'],
  [401, 'unauthorized'],
  [403, 'forbidden'],
  [404, 'not_found'],
  [405, 'method_not_allowed'],
  [413, 'payload_too_large'],
  [500, 'internal_error'],
  [503, 'service_unavailable'],
  [507, 'insufficient_storage'],
]);

export class TaskdeckError extends Error {
  /**
   * @param {string} code the service's code, or one found on this side
   * @param {string} message for a person; never holds the token
   * @param {{status?: number, requestId?: string|null, details?: object, cause?: unknown}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'TaskdeckError';
    this.code = code;
    this.status = extra.status ?? 0;
    this.requestId = extra.requestId ?? null;
    this.details = extra.details ?? {};
  }
}

// The error of an answer outside 2xx, from its {"error":{...}} body when it has one.
export function errorFromAnswer(status, requestId, bodyText) {
  let err = null;
  try {
    const doc = JSON.parse(bodyText);
    if (doc && typeof doc === 'object' && doc.error && typeof doc.error === 'object' &&
        typeof doc.error.code === 'string') {
      err = doc.error;
    }
  } catch {
    // not JSON: mapped from the status below
  }
  if (err !== null) {
    const details = err.details && typeof err.details === 'object' ? err.details : {};
    const message = typeof err.message === 'string' && err.message !== ''
      ? err.message : `HTTP ${status} ${err.code}`;
    return new TaskdeckError(err.code, message, { status, requestId, details });
  }
  const code = STATUS_CODES.get(status) ?? 'invalid_response';
  return new TaskdeckError(code,
    `HTTP ${status} without a taskdeck error body`, { status, requestId });
}
