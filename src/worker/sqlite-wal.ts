/**
 * A SQLite write-ahead log whose page contents were masked in place (a secret replaced by as many
 * characters) gets its checksums recomputed, so SQLite still reads the frames (with a stale checksum, a frame
 * and every one after it would be dropped: the worker's session would lose its latest messages).
 *
 * The format, as SQLite documents it: a 32-byte header (magic 0x377f0682 for little-endian checksums or
 * 0x377f0683 for big-endian, version, page size, checkpoint sequence, salt-1, salt-2, checksum-1, checksum-2),
 * then frames of a 24-byte header (page number, database size after a commit, salt-1, salt-2, checksum-1,
 * checksum-2) and one page. The checksum runs over 32-bit words, consecutively: the header's first 24 bytes,
 * then each frame's first 8 header bytes and its page. A frame is valid when its salts match the header's and
 * its checksum matches; the first invalid frame ends the log. The file is the worker's: it is only read, with
 * every bound checked, and only the frames that were valid before the masking are sealed again.
 */

const MAGIC_LITTLE_ENDIAN = 0x377f0682;
const MAGIC_BIG_ENDIAN = 0x377f0683;
const HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;

type Sum = readonly [number, number];

function checksum(data: Buffer, start: number, length: number, from: Sum, bigEndian: boolean): Sum {
  let [s0, s1] = from;
  for (let at = start; at < start + length; at += 8) {
    const x0 = bigEndian ? data.readUInt32BE(at) : data.readUInt32LE(at);
    const x1 = bigEndian ? data.readUInt32BE(at + 4) : data.readUInt32LE(at + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

const stored = (data: Buffer, at: number): Sum => [data.readUInt32BE(at), data.readUInt32BE(at + 4)];
const same = (a: Sum, b: Sum) => a[0] === b[0] && a[1] === b[1];

/** Whether `data` starts like a SQLite write-ahead log. */
export function isSqliteWal(data: Buffer): boolean {
  if (data.length < HEADER_BYTES) return false;
  const magic = data.readUInt32BE(0);
  return magic === MAGIC_LITTLE_ENDIAN || magic === MAGIC_BIG_ENDIAN;
}

/**
 * `masked` (the same log, same length, some page bytes changed) with the checksums of every frame that was
 * valid in `original` recomputed; anything that is not a valid log is returned as it is.
 */
export function resealWal(original: Buffer, masked: Buffer): Buffer {
  if (!isSqliteWal(original) || masked.length !== original.length) return masked;
  const bigEndian = original.readUInt32BE(0) === MAGIC_BIG_ENDIAN;
  const pageSize = original.readUInt32BE(8);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return masked;
  let before = checksum(original, 0, 24, [0, 0], bigEndian);
  if (!same(before, stored(original, 24))) return masked;
  const out = Buffer.from(masked);
  let after = checksum(out, 0, 24, [0, 0], bigEndian);
  out.writeUInt32BE(after[0], 24);
  out.writeUInt32BE(after[1], 28);
  const frameBytes = FRAME_HEADER_BYTES + pageSize;
  for (let frame = HEADER_BYTES; frame + frameBytes <= original.length; frame += frameBytes) {
    const salted =
      original.readUInt32BE(frame + 8) === original.readUInt32BE(16) &&
      original.readUInt32BE(frame + 12) === original.readUInt32BE(20);
    before = checksum(original, frame, 8, before, bigEndian);
    before = checksum(original, frame + FRAME_HEADER_BYTES, pageSize, before, bigEndian);
    if (!salted || !same(before, stored(original, frame + 16))) break;
    after = checksum(out, frame, 8, after, bigEndian);
    after = checksum(out, frame + FRAME_HEADER_BYTES, pageSize, after, bigEndian);
    out.writeUInt32BE(after[0], frame + 16);
    out.writeUInt32BE(after[1], frame + 20);
  }
  return out;
}
