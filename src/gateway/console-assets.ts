/**
 * The web console's static files (SPEC 19): built by `npm run build` into `dist/console/` (web/vite.config.ts) and
 * served by the gateway on its own port. Only files inside that folder are ever read: the request path is decoded
 * once, must be plain (no `..` segment, no backslash, no NUL, no encoded slash) and the resolved file must still lie
 * under the folder, so a hostile path cannot reach anything else on the disk.
 */
import fs from "node:fs";
import type http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** dist/gateway/console-assets.js → dist/console (from src/ under vitest there is none: the banner is served). */
export function defaultConsoleDir(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "console");
}

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json; charset=utf-8",
  ".webmanifest": "application/manifest+json",
  ".txt": "text/plain; charset=utf-8",
};

/** Vite names built assets `name-<hash>.ext` under assets/: their content never changes under the same name. */
const IMMUTABLE = "public, max-age=31536000, immutable";
/** index.html names the current hashed assets: a browser must ask again each time. */
const REVALIDATE = "no-cache";

/** What the page may load: only its own files and its own gateway's WebSocket; nothing inline, nothing framed. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

export interface ConsoleFile {
  absPath: string;
  contentType: string;
  cacheControl: string;
}

export class ConsoleAssets {
  readonly dir: string;
  /** false when the console was not built (a run from src/): the gateway answers `/` with its JSON banner then */
  readonly available: boolean;

  constructor(dir: string = defaultConsoleDir()) {
    this.dir = path.resolve(dir);
    this.available = fs.existsSync(path.join(this.dir, "index.html"));
  }

  /**
   * The file a request path names, or undefined (not found, or not a path we serve). `/` is index.html; anything
   * else must name a file exactly (no directory listings, no fallback page for unknown paths: the app routes by
   * hash, so it never needs one).
   */
  resolve(urlPath: string): ConsoleFile | undefined {
    if (!this.available) return undefined;
    let decoded: string;
    try {
      decoded = decodeURIComponent(urlPath);
    } catch {
      return undefined;
    }
    if (!decoded.startsWith("/") || /[\\\0]/.test(decoded) || /%2f|%5c/i.test(urlPath)) return undefined;
    const rel = decoded === "/" ? "index.html" : decoded.slice(1);
    const segments = rel.split("/");
    if (segments.some((s) => s === "" || s === "." || s === ".." || s.startsWith("."))) return undefined;
    const absPath = path.resolve(this.dir, ...segments);
    if (!absPath.startsWith(this.dir + path.sep)) return undefined;
    const contentType = CONTENT_TYPES[path.extname(absPath).toLowerCase()];
    if (!contentType) return undefined;
    let stat: fs.Stats;
    try {
      // lstat: a symlink planted in the folder is not followed out of it
      stat = fs.lstatSync(absPath);
    } catch {
      return undefined;
    }
    if (!stat.isFile()) return undefined;
    const hashed = segments[0] === "assets" && segments.length === 2;
    return { absPath, contentType, cacheControl: hashed ? IMMUTABLE : REVALIDATE };
  }

  /** Answers GET/HEAD for a console file; false when the path is not one (the caller answers 404). */
  serve(req: http.IncomingMessage, res: http.ServerResponse, urlPath: string): boolean {
    const file = this.resolve(urlPath);
    if (!file) return false;
    let body: Buffer;
    try {
      body = fs.readFileSync(file.absPath);
    } catch {
      return false;
    }
    res.writeHead(200, {
      "content-type": file.contentType,
      "content-length": body.length,
      "cache-control": file.cacheControl,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      ...(file.contentType.startsWith("text/html")
        ? { "content-security-policy": CSP, "x-frame-options": "DENY" }
        : {}),
    });
    res.end(req.method === "HEAD" ? undefined : body);
    return true;
  }
}
