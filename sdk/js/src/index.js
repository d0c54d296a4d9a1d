export { connectToTaskdeck, TaskdeckClient, VERSION, DEFAULT_REQUEST_TIMEOUT_MS } from './client.js';
export { TaskdeckError } from './errors.js';
export { EVENT_BACKLOG, DEFAULT_IDLE_TIMEOUT_MS } from './events.js';
