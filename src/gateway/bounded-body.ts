/**
 * Reading a request body with a cap, counted as it streams in: a body over the cap is never held in memory
 * (a declared Content-Length over it is refused before a byte is read).
 */
import type { IncomingMessage } from 'node:http';

export type BoundedBody = { body: Buffer } | { tooLarge: number };

/**
 * The whole body when it is at most `maxBytes`; otherwise how many bytes were seen. Reading stops there and
 * the request is left paused: the caller answers (413) and closes the connection.
 */
export function readBoundedBody(request: IncomingMessage, maxBytes: number): Promise<BoundedBody> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    request.pause();
    return Promise.resolve({ tooLarge: declared });
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        request.pause();
        resolve({ tooLarge: size });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ body: Buffer.concat(chunks, size) });
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}
