// Reading an answer someone else wrote within a bound: a declared Content-Length past it is
// refused without reading, a streamed body is read until it passes the bound and then dropped
// (the connection with it), so an oversized or endless answer costs a bounded buffer.

/** The body is (or says it is) larger than the bound. */
export class BodyTooLarge extends Error {
  override readonly name = 'BodyTooLarge';
  constructor(readonly maxBytes: number, readonly declared: boolean) {
    super(declared ? `the answer declares more than ${maxBytes} bytes` : `the answer is larger than ${maxBytes} bytes`);
  }
}

/** The whole body of `response`, at most `maxBytes`; past that the body is cancelled and BodyTooLarge thrown. */
export async function readLimited(response: Response, maxBytes: number): Promise<Buffer> {
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw new BodyTooLarge(maxBytes, true);
  }
  const chunks: Uint8Array[] = [];
  let length = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      length += value.byteLength;
      if (length > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new BodyTooLarge(maxBytes, false);
      }
      chunks.push(value);
    }
  }
  return Buffer.concat(chunks);
}

/** Statuses whose Response may carry no body. */
const NULL_BODY = new Set([204, 205, 304]);

/**
 * `response` held in memory: the same status and headers, the body read within `maxBytes`. A
 * success (2xx) past the bound throws BodyTooLarge; any other status keeps its status and headers
 * (a challenge, a redirect's Location) and loses the body, which is then only an error page.
 * `anyStatus`: every status past the bound throws (where an oversized error is no answer either).
 */
export async function bufferedResponse(response: Response, maxBytes: number, options: { anyStatus?: boolean } = {}): Promise<Response> {
  let body: Buffer | null;
  try {
    body = await readLimited(response, maxBytes);
  } catch (err) {
    if (!(err instanceof BodyTooLarge) || options.anyStatus === true || (response.status >= 200 && response.status < 300)) throw err;
    body = null;
  }
  const headers = new Headers(response.headers);
  // The body is whole and already decoded: its length and coding are no longer what these said.
  for (const name of ['content-length', 'content-encoding', 'transfer-encoding']) headers.delete(name);
  const status = response.status;
  return new Response(NULL_BODY.has(status) || body?.length === 0 ? null : body, { status, statusText: response.statusText, headers });
}
