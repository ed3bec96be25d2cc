// A Hurray file behind HTTP: `openUrl(url)` lists its tensors from at most
// two range requests; `tensor(name).read()` fetches one tensor's bytes with
// one more.

import { guarded, HurrayError } from "./errors.js";
import { FOOTER_LEN, PREFIX_LEN } from "./format.js";
import { locate, readHeader, type Contents } from "./header.js";
import { Listing } from "./listing.js";
import { RemoteTensor } from "./remote-tensor.js";

/**
 * How many bytes the first request asks for from the end: the footer and,
 * for most files, the whole header (a header takes about 150 bytes per
 * tensor), so a second request is needed only for the prefix.
 */
export const OPEN_SUFFIX = 1 << 20;

/** Options of {@link openUrl}. */
export interface OpenUrlOptions {
  /** The fetch to use (default: the global one), e.g. one that adds credentials. */
  readonly fetch?: typeof fetch;
  /** Headers sent with every request (authorization, say). */
  readonly headers?: Readonly<Record<string, string>>;
  /** How many bytes the first request reads from the end (default {@link OPEN_SUFFIX}). */
  readonly suffixBytes?: number;
}

/** The bytes a range request returned, with the object's length. */
interface Piece {
  readonly start: number;
  readonly bytes: Uint8Array;
  readonly total: number;
}

/** A verified Hurray file behind a URL; only its header has been read. */
export class RemoteFile extends Listing {
  /** @internal Use {@link openUrl}. */
  constructor(
    contents: Contents,
    readonly url: string,
    /** The object's length when it was opened. */
    readonly length: number,
    private readonly get: (range: string) => Promise<Piece>,
  ) {
    super(contents);
  }

  /** The tensor called `name`; throws `HurrayError` (`NoSuchTensor`) if there is none. */
  tensor(name: string): RemoteTensor {
    return new RemoteTensor(this.descriptor(name), (offset, length) => this.range(offset, length));
  }

  /** @internal `length` bytes at `offset`, by one range request. */
  async range(offset: number, length: number): Promise<Uint8Array> {
    const piece = await this.get(`bytes=${offset}-${offset + length - 1}`);
    if (piece.total !== this.length) {
      throw new HurrayError("Io", `${this.url} changed since it was opened: ${piece.total} bytes, were ${this.length}`);
    }
    return slice([piece], offset, length, this.url);
  }
}

/** Bytes [offset, offset + length) from whichever piece holds them all. */
function slice(pieces: readonly Piece[], offset: number, length: number, url: string): Uint8Array {
  for (const piece of pieces) {
    const from = offset - piece.start;
    if (from >= 0 && from + length <= piece.bytes.length) return piece.bytes.subarray(from, from + length);
  }
  throw new HurrayError("Io", `${url}: the server did not return bytes [${offset}, ${offset + length})`);
}

/** The `Content-Range` of a 206 reply: its first byte and the object's length. */
function contentRange(value: string | null, url: string): { start: number; total: number } {
  const m = value === null ? null : /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value.trim());
  if (m === null) throw new HurrayError("Io", `${url}: a partial reply without a usable Content-Range (${String(value)})`);
  return { start: Number(m[1]), total: Number(m[3]) };
}

/**
 * Opens the Hurray file at `url` over HTTP(S): one range request for its
 * last {@link OPEN_SUFFIX} bytes (the footer, and the header when it fits),
 * then one for the prefix and whatever of the header the first did not
 * hold (as one multi-range request; a server that answers that with the
 * whole object is asked again one range at a time, so it costs a third); a
 * file no longer than the first request's reach takes one. The
 * header is verified as {@link openFile} verifies it. The server must
 * answer range requests (`206` with `Content-Range`; across origins it must
 * also expose that header); a server that sends the whole file instead is
 * accepted, at the cost of the download. Throws `HurrayError`.
 */
export async function openUrl(url: string, options: OpenUrlOptions = {}): Promise<RemoteFile> {
  const fetcher = options.fetch ?? globalThis.fetch;
  if (typeof fetcher !== "function") throw new HurrayError("InvalidArgument", "openUrl needs fetch (Node 18 or later, or a browser)");
  // `whole`: whether a 200 reply (the whole object) is acceptable; when it
  // is not, such a reply is abandoned unread and `null` returned.
  const get = async (range: string, whole = true): Promise<Piece[] | null> => {
    let reply: Response;
    try {
      reply = await fetcher(url, { headers: { ...options.headers, Range: range } });
    } catch (e) {
      throw new HurrayError("Io", `${url}: ${String(e)}`);
    }
    if (reply.status === 416) {
      throw new HurrayError("TooShort", `${url}: the server has no bytes ${range.slice(6)} (416)`);
    }
    if (reply.status !== 200 && reply.status !== 206) {
      throw new HurrayError("Io", `${url}: HTTP ${reply.status} for the range ${range.slice(6)}`);
    }
    if (reply.status === 200 && !whole) {
      await reply.body?.cancel();
      return null;
    }
    const bytes = new Uint8Array(await reply.arrayBuffer());
    if (reply.status === 200) return [{ start: 0, bytes, total: bytes.length }];
    const type = reply.headers.get("content-type") ?? "";
    const boundary = /^multipart\/byteranges;\s*boundary="?([^";]+)"?/i.exec(type);
    if (boundary !== null) return multipart(bytes, boundary[1], url);
    const { start, total } = contentRange(reply.headers.get("content-range"), url);
    return [{ start, bytes, total }];
  };
  const suffix = options.suffixBytes ?? OPEN_SUFFIX;
  if (!Number.isSafeInteger(suffix) || suffix < FOOTER_LEN) {
    throw new HurrayError("InvalidArgument", `suffixBytes = ${suffix}: at least the ${FOOTER_LEN}-byte footer`);
  }
  const [tail] = (await get(`bytes=-${suffix}`))!;
  const total = tail.total;
  if (total < PREFIX_LEN + FOOTER_LEN) {
    throw new HurrayError("TooShort", `file is ${total} bytes, shorter than the ${PREFIX_LEN + FOOTER_LEN} bytes of an empty Hurray file`);
  }
  const pieces = [tail];
  if (tail.start !== 0) {
    // The prefix, and the header's start when the suffix lacks it (a
    // multi-range request). The footer's header offset is trusted only to
    // choose what to ask for: it is checked with the prefix below.
    const footer = slice([tail], total - FOOTER_LEN, FOOTER_LEN, url);
    const headerOffset = new DataView(footer.buffer, footer.byteOffset, FOOTER_LEN).getBigUint64(0, true);
    const prefix = `0-${PREFIX_LEN - 1}`;
    let replies: Piece[] | null;
    if (headerOffset < BigInt(tail.start) && headerOffset >= BigInt(PREFIX_LEN)) {
      const header = `${headerOffset}-${tail.start - 1}`;
      replies = await get(`bytes=${prefix},${header}`, false);
      if (replies === null) {
        // A server without multi-range replies (S3 is one) sent the whole
        // object: asked again, one range at a time, rather than downloaded.
        replies = [...(await get(`bytes=${prefix}`))!, ...(await get(`bytes=${header}`))!];
      }
    } else {
      replies = (await get(`bytes=${prefix}`))!;
    }
    for (const piece of replies) {
      if (piece.total !== total) throw new HurrayError("Io", `${url} changed while it was opened`);
      pieces.push(piece);
    }
  }
  const located = locate(slice(pieces, 0, PREFIX_LEN, url), slice(pieces, total - FOOTER_LEN, FOOTER_LEN, url), total);
  // The header's bytes: from the suffix, and before it from the second
  // reply; each part is taken from bytes received before anything is
  // allocated for the whole.
  const headerEnd = located.headerOffset + located.headerLength;
  const fromTail = Math.max(located.headerOffset, tail.start);
  const end = slice([tail], fromTail, headerEnd - fromTail, url);
  let header = end;
  if (located.headerOffset < tail.start) {
    const start = slice(pieces, located.headerOffset, tail.start - located.headerOffset, url);
    header = new Uint8Array(start.length + end.length);
    header.set(start, 0);
    header.set(end, start.length);
  }
  const contents = guarded(() => readHeader(header, located));
  return new RemoteFile(contents, url, total, async (range) => (await get(range))![0]);
}

/** The parts of a `multipart/byteranges` reply. */
function multipart(body: Uint8Array, boundary: string, url: string): Piece[] {
  const text = new TextDecoder("latin1").decode(body);
  const pieces: Piece[] = [];
  let at = 0;
  for (;;) {
    const mark = text.indexOf(`--${boundary}`, at);
    if (mark < 0) break;
    const after = mark + boundary.length + 2;
    if (text.startsWith("--", after)) break;
    const end = text.indexOf("\r\n\r\n", after);
    if (end < 0) break;
    const headers = text.slice(after, end);
    const range = /content-range:\s*bytes (\d+)-(\d+)\/(\d+)/i.exec(headers);
    if (range === null) throw new HurrayError("Io", `${url}: a multipart reply's part has no Content-Range`);
    const [start, last, total] = [Number(range[1]), Number(range[2]), Number(range[3])];
    const from = end + 4;
    const length = last - start + 1;
    if (length < 0 || from + length > body.length) throw new HurrayError("Io", `${url}: a multipart reply ends inside a part`);
    pieces.push({ start, bytes: body.subarray(from, from + length), total });
    at = from + length;
  }
  if (pieces.length === 0) throw new HurrayError("Io", `${url}: a multipart reply without parts`);
  return pieces;
}
