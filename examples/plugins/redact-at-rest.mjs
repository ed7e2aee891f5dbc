// Redaction at rest: what the transcript keeps of each tool result has its secrets masked before it is written.
// The model still gets the real result in this run (the hook rewrites only the stored copy), so it can use what it
// read; later turns and every reader of the store (chat.history, `loopgate sessions show`, a backup of
// loopgate.sqlite) see the masked text.
//
// Load it from the config:  plugins: { load: { paths: ["./redact-at-rest.mjs"] },
//                                      entries: { "redact-at-rest": { config: { patterns: ["acme_[A-Za-z0-9]{24}"] } } } }
// `patterns` (optional) adds your own secret formats, as regular expression sources.

export const id = "redact-at-rest";

const MASK = "[redacted]";

// `NAME=value` lines whose name says secret (.env files, `env` output): the value goes, the name stays.
const SECRET_ASSIGNMENT = /^(\s*(?:export\s+)?[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_KEY)[A-Z0-9_]*\s*=\s*).+$/gm;
// Well-known token formats: OpenAI/Anthropic-style keys, GitHub tokens, AWS access key ids, private key blocks.
const KNOWN_FORMATS = [
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
];

export function register(api) {
  const extra = (api.config?.patterns ?? []).map((source) => new RegExp(source, "g"));
  const mask = (text) => {
    let out = text.replace(SECRET_ASSIGNMENT, `$1${MASK}`);
    for (const pattern of [...KNOWN_FORMATS, ...extra]) out = out.replace(pattern, MASK);
    return out;
  };
  // Must answer synchronously: it runs on the transcript write path, right before the row is stored.
  api.on("tool_result_persist", (event) => {
    const message = event.message;
    if (typeof message?.content !== "string") return undefined;
    const content = mask(message.content);
    return content === message.content ? undefined : { message: { ...message, content } };
  });
}
