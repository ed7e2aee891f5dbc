// Talk to a Loopgate gateway with the official `openai` npm package (docs/openai-http.md).
//
//   # in the gateway's config: gateway.http.endpoints.chatCompletions.enabled and .responses.enabled: true
//   npm install openai
//   LOOPGATE_URL=http://127.0.0.1:18789 LOOPGATE_TOKEN=<a gateway token> node openai-client.mjs
//
// It sends one chat completion, one streamed chat completion and one Responses API request to the same session
// (`user` names it: agent:<agentId>:openai-user:<user>), printing each reply, then the session key, so the
// conversation can go on from the CLI: `loopgate agent --session <key> -m "..."`.
import OpenAI from "openai";

const base = process.env.LOOPGATE_URL ?? "http://127.0.0.1:18789";
const model = process.env.LOOPGATE_MODEL ?? "loopgate/main";
const user = process.env.LOOPGATE_USER ?? "example";
// without a token the gateway must be a tokenless loopback one; the client still wants a non-empty key
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: process.env.LOOPGATE_TOKEN || "none" });

const models = await openai.models.list();
console.log(`models: ${models.data.map((m) => m.id).join(", ")}`);

const completion = await openai.chat.completions.create({
  model,
  user,
  messages: [{ role: "user", content: "Say hello in five words." }],
});
console.log(`chat completion: ${completion.choices[0].message.content}`);
console.log(`  usage: ${completion.usage?.prompt_tokens} prompt + ${completion.usage?.completion_tokens} completion tokens`);

process.stdout.write("streamed chat completion: ");
const stream = await openai.chat.completions.create({
  model,
  user,
  stream: true,
  messages: [{ role: "user", content: "Now count to five." }],
});
let chunks = 0;
for await (const chunk of stream) {
  const delta = chunk.choices[0]?.delta.content;
  if (delta) {
    chunks++;
    process.stdout.write(delta);
  }
}
console.log(`\n  (${chunks} chunks)`);

const response = await openai.responses.create({ model, user, input: "And what did I ask you first?" });
console.log(`responses.create: ${response.output_text}`);
console.log(`session: agent:${model.replace(/^loopgate\//, "")}:openai-user:${user}`);
