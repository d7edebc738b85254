// JSON logs (pino), one object per line, for journald or a container log driver. The prober
// token travels in an Authorization header; redaction keeps it out of every log line even
// when a caller logs a whole header or config object by mistake.
import { type DestinationStream, type Logger, pino } from 'pino';
import type { LogLevel } from '../config.ts';

export type { Logger } from 'pino';

/** Field paths whose values are replaced with "[redacted]" wherever they are logged. */
export const REDACTED_PATHS = [
  'token',
  'proberToken',
  'PROBER_TOKEN',
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.token',
  '*.proberToken',
  '*.PROBER_TOKEN',
  '*.authorization',
  '*.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
];

export interface LoggerOptions {
  level: LogLevel;
  /** Where lines go; stdout by default (stderr for the CLI, whose stdout is the verdict). */
  destination?: DestinationStream | 1 | 2;
}

export function createLogger(options: LoggerOptions): Logger {
  const destination =
    typeof options.destination === 'object'
      ? options.destination
      : // Synchronous writes: the daemon calls process.exit after a drain, and the last lines
        // ("drained", "exiting") must not be lost in an async buffer.
        pino.destination({ dest: options.destination ?? 1, sync: true });
  return pino(
    {
      name: 'rcpt-prober',
      level: options.level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
