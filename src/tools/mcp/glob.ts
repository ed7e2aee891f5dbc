/**
 * Tool-name globs of mcp.servers.<name>.toolFilter and approval: `*` matches any run of characters, `?` one.
 * Case-sensitive, because MCP tool names are.
 */
export function globMatcher(patterns: readonly string[]): (name: string) => boolean {
  const regexes = patterns.map((pattern) => {
    const body = [...pattern]
      .map((ch) => (ch === "*" ? ".*" : ch === "?" ? "." : ch.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
      .join("");
    return new RegExp(`^${body}$`, "s");
  });
  return (name) => regexes.some((re) => re.test(name));
}

/** toolFilter: a tool is offered when include (absent: all) matches it and exclude does not. */
export function toolFilterMatcher(filter: { include?: string[]; exclude?: string[] } | undefined) {
  const include = filter?.include ? globMatcher(filter.include) : () => true;
  const exclude = globMatcher(filter?.exclude ?? []);
  return (tool: string) => include(tool) && !exclude(tool);
}
