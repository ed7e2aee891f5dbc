/**
 * `loopgate sessions list | head -1`: once the reader has gone, every further write to stdout fails with EPIPE, which
 * Node reports as an unhandled 'error' event (a stack trace and exit 1). The reader asked for no more output, so
 * nothing went wrong: stop at once, quietly, with exit 0, as `git log | head -1` and most Node CLIs do. Any other
 * stdout error stays loud.
 */
export function exitQuietlyWhenStdoutCloses(stream: NodeJS.WriteStream = process.stdout): void {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(0);
    throw err;
  });
}
