// Validates workflow files against ferry's JSON Schema with ajv (a real, independent
// validator), reading YAML with the `yaml` package; both from the npm cache that
// scripts/install-deps.sh fills ($FERRY_NPM_DIR, default /var/cache/ferry/npm).
// Usage: node validate_workflows.cjs SCHEMA FILE...   prints "FILE: valid" or
// "FILE: invalid: <first errors>" per file; exit 0 unless it could not run.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const npmDir = process.env.FERRY_NPM_DIR || "/var/cache/ferry/npm";
const need = (pkg) => require(path.join(npmDir, "node_modules", pkg));
const Ajv = need("ajv").default;
const YAML = need("yaml");

const [schemaFile, ...files] = process.argv.slice(2);
const ajv = new Ajv({ allErrors: true, strict: false, strictSchema: true });
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaFile, "utf8")));
for (const f of files) {
  let doc;
  try {
    // Duplicate keys are an error in ferry too (workflows/README.md, "Names").
    doc = YAML.parse(fs.readFileSync(f, "utf8"), { uniqueKeys: true });
  } catch (e) {
    console.log(`${f}: invalid: YAML: ${e.message.split("\n")[0]}`);
    continue;
  }
  if (validate(doc)) {
    console.log(`${f}: valid`);
  } else {
    const why = validate.errors.slice(0, 3).map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
    console.log(`${f}: invalid: ${why}`);
  }
}
