// Structured JSON logs, one line per event. The sink is injected (main.ts passes stderr), so
// tests capture output and nothing here touches process.*.

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
  isEnabled(level: LogLevel): boolean;
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface LoggerOptions {
  level: LogLevel;
  write: (line: string) => void;
  now?: () => Date;
  /** Applied to every finished line: keeps secrets out of the log (see util/redact.ts). */
  redact?: (line: string) => string;
}

export function createLogger(options: LoggerOptions, bound: LogFields = {}): Logger {
  const threshold = rank[options.level];
  const now = options.now ?? (() => new Date());
  const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
    if (rank[level] < threshold) return;
    const line = JSON.stringify({ time: now().toISOString(), level, msg: message, ...bound, ...fields }, errorReplacer);
    options.write(`${options.redact ? options.redact(line) : line}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(options, { ...bound, ...fields }),
    isEnabled: (level) => rank[level] >= threshold,
  };
}

export const silentLogger: Logger = createLogger({ level: 'silent', write: () => {} });

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return code === undefined ? { name: value.name, message: value.message } : { name: value.name, message: value.message, code };
  }
  return value;
}

/** Shortens text for a log line (hostile upstream output can be megabytes). */
export function truncate(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}
