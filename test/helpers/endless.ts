// An HTTP answer that never ends: a JSON key set whose padding goes on for as long as the
// reader reads (the hostile JWKS of the size-bound tests).
import type { ServerResponse } from 'node:http';

/** Writes whenever the socket drains, until the reader goes away; `onClose` gets the bytes written. */
export function endlessJwks(res: ServerResponse, onClose: (written: number) => void): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"keys":[],"pad":"');
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  let written = 0;
  const pump = (): void => {
    while (!res.destroyed) {
      written += chunk.length;
      if (!res.write(chunk)) return;
    }
  };
  res.on('drain', pump);
  res.on('close', () => onClose(written));
  pump();
}
