// The edge's logs: one JSON object per line on the Worker's console, in the prober's shape
// (`level` as a word, ISO `time`, `name`, `msg`, then fields), so Workers Logs, `wrangler tail`
// and a log pipeline read both programs alike. Fields named like a credential are replaced
// with "[redacted]" wherever they appear, even when a caller logs a whole object by mistake.

export type LogLevel = 'info' | 'warn' | 'error';

export type LogFields = Record<string, unknown>;

/** Field names (compared in lower case) whose values never reach a log line. */
const SECRET_FIELDS = new Set([
  'authorization',
  'x-api-key',
  'apikey',
  'api_key',
  'cookie',
  'set-cookie',
  'password',
  'secret',
  'token',
  'prober_token',
  'probertoken',
  'secrets_key',
  'webhooksecret',
]);

function redact(value: unknown, depth = 0): unknown {
  if (depth > 5 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) => [
      key,
      SECRET_FIELDS.has(key.toLowerCase()) ? '[redacted]' : redact(field, depth + 1),
    ]),
  );
}

/** `Error` as loggable fields: its name and message, and the stack for operators. */
export function errorFields(error: unknown): LogFields {
  return error instanceof Error
    ? { error: `${error.name}: ${error.message}`, stack: error.stack }
    : { error: String(error) };
}

function write(level: LogLevel, msg: string, fields: LogFields): void {
  const line = JSON.stringify({
    level,
    time: new Date().toISOString(),
    name: 'rcpt-edge',
    msg,
    ...(redact(fields) as LogFields),
  });
  if (level === 'error') console.error(line);
  else if (level === 'warn') console.warn(line);
  else console.log(line);
}

export const log = {
  info: (msg: string, fields: LogFields = {}) => write('info', msg, fields),
  warn: (msg: string, fields: LogFields = {}) => write('warn', msg, fields),
  error: (msg: string, fields: LogFields = {}) => write('error', msg, fields),
};
