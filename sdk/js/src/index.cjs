'use strict';

// @taskdeck/sdk for require(): the one implementation (index.js gives it to import).
const client = require('./client.cjs');
const errors = require('./errors.cjs');
const transport = require('./transport.cjs');
const events = require('./events.cjs');

module.exports = {
  connectToTaskdeck: client.connectToTaskdeck,
  TaskdeckClient: client.TaskdeckClient,
  ApiPromise: client.ApiPromise,
  VERSION: client.VERSION,
  DEFAULT_REQUEST_TIMEOUT_MS: client.DEFAULT_REQUEST_TIMEOUT_MS,
  TaskdeckError: errors.TaskdeckError,
  BadRequestError: errors.BadRequestError,
  AuthenticationError: errors.AuthenticationError,
  PermissionDeniedError: errors.PermissionDeniedError,
  NotFoundError: errors.NotFoundError,
  ConflictError: errors.ConflictError,
  RateLimitError: errors.RateLimitError,
  InternalServerError: errors.InternalServerError,
  ConnectionError: errors.ConnectionError,
  TimeoutError: errors.TimeoutError,
  AbortError: errors.AbortError,
  EventStreamError: errors.EventStreamError,
  DEFAULT_MAX_RETRIES: transport.DEFAULT_MAX_RETRIES,
  EVENT_BACKLOG: events.EVENT_BACKLOG,
  DEFAULT_IDLE_TIMEOUT_MS: events.DEFAULT_IDLE_TIMEOUT_MS,
};
