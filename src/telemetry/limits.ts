// How much of what a request names a span or an audit record keeps (the cut itself, a copy, is
// util/cut.ts), and how long shutdown waits for a collector.

/** Client-chosen strings in spans are cut to this many characters (audit cuts its fields the same). */
export const TEXT_LIMIT = 1024;

/** Payload attributes are cut to 4 KiB (tracing.payloads): the longest attribute value a span keeps. */
export const PAYLOAD_LIMIT = 4096;

/** How long shutdown waits for a collector (or a stalled audit sink) before giving up what it holds. */
export const CLOSE_TIMEOUT_MS = 5_000;
