// The independent references the tokenizer tests compare against, run once per test
// with the whole corpus: Hugging Face's JS tokenizer (@huggingface/tokenizers) and their
// Jinja (@huggingface/jinja) rendering the model's own chat template.
//   node hf_reference.mjs encode NPM_DIR tokenizer.json tokenizer_config.json IN.json OUT.json
//        IN: a list of strings; OUT: {ids: [id list per string], nfc: [NFC of each string]}
//   node hf_reference.mjs decode NPM_DIR tokenizer.json tokenizer_config.json IN.json OUT.json
//        IN: a list of id lists; OUT: their texts
//   node hf_reference.mjs chat NPM_DIR tokenizer_config.json IN.json OUT.json
//        IN: a list of {messages, enable_thinking?}; OUT: the rendered prompts
//   node hf_reference.mjs bench NPM_DIR tokenizer.json tokenizer_config.json IN.json ROUNDS
//        prints the encode throughput over the strings of IN.json (ROUNDS passes), in MB/s
// NPM_DIR holds node_modules/ (scripts/install-deps.sh fills it).
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [mode, npmDir, ...rest] = process.argv.slice(2);
const load = (pkg, file) => import(pathToFileURL(join(npmDir, "node_modules", pkg, file)).href);
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));

if (mode === "encode" || mode === "bench" || mode === "decode") {
  const { Tokenizer } = await load("@huggingface/tokenizers", "dist/tokenizers.mjs");
  const [tokenizerJson, configJson, input, output] = rest;
  const tokenizer = new Tokenizer(readJson(tokenizerJson), readJson(configJson));
  if (mode === "decode") {
    const texts = readJson(input).map((ids) => tokenizer.decode(ids, { skip_special_tokens: false }));
    writeFileSync(output, JSON.stringify(texts));
  } else if (mode === "encode") {
    const texts = readJson(input);
    const ids = texts.map((text) => tokenizer.encode(text, { add_special_tokens: false }).ids);
    writeFileSync(output, JSON.stringify({ ids, nfc: texts.map((text) => text.normalize("NFC")) }));
  } else {
    const texts = readJson(input);
    const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t, "utf8"), 0);
    const rounds = Number(output);
    let tokens = 0;
    const start = process.hrtime.bigint();
    for (let r = 0; r < rounds; ++r) {
      for (const text of texts) tokens += tokenizer.encode(text, { add_special_tokens: false }).ids.length;
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    console.log(JSON.stringify({ mb_per_s: (bytes * rounds) / seconds / 1e6, seconds, tokens, bytes }));
  }
} else if (mode === "chat") {
  const { Template } = await load("@huggingface/jinja", "dist/index.js");
  const [configJson, input, output] = rest;
  const config = readJson(configJson);
  const template = new Template(config.chat_template);
  const rendered = readJson(input).map((c) => {
    const vars = { messages: c.messages, add_generation_prompt: true, bos_token: "", eos_token: config.eos_token };
    if (c.enable_thinking !== undefined) vars.enable_thinking = c.enable_thinking;
    return template.render(vars);
  });
  writeFileSync(output, JSON.stringify(rendered));
} else {
  console.error(`hf_reference.mjs: unknown mode '${mode}'`);
  process.exit(2);
}
