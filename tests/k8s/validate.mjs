// validate.mjs FILE.yaml... - validates Kubernetes manifests offline
// against the API schemas, two ways, and prints one line per object:
//
// 1. kubernetes-models' validators: JSON Schema (ajv, compiled) generated
//    from the Kubernetes OpenAPI spec (kubernetes-models 5.1.0) and, for
//    ServiceMonitor, from the Prometheus Operator's CRD
//    (@kubernetes-models/prometheus-operator 6.0.0): types, required
//    fields, enums, formats (int32, quantities, ...).
// 2. TypeScript's excess-property check against the same generated
//    interfaces (tsc, strict): an unknown or misspelt field anywhere in
//    the object (`runtimeclassName`, `hostPid`) is an error, which the
//    OpenAPI schemas alone do not catch (they allow extra properties;
//    the API server would drop such a field, or reject it under
//    strict field validation).
//
// Exit 1 with the object and the path of each problem.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import YAML from "yaml";

const require = createRequire(import.meta.url);
const ts = require("typescript");

// apiVersion -> module directory of its models
function modelDir(apiVersion) {
  if (apiVersion === "monitoring.coreos.com/v1") return "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
  if (apiVersion === "v1") return "kubernetes-models/v1";
  return "kubernetes-models/" + apiVersion; // apps/v1, networking.k8s.io/v1, ...
}

const docs = [];
for (const file of process.argv.slice(2)) {
  const all = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
  all.forEach((d, i) => {
    if (d.errors.length) throw new Error(`${file} document ${i + 1}: ${d.errors[0].message}`);
    const obj = d.toJS();
    if (obj == null) return;
    docs.push({ file: path.basename(file), obj, where: `${path.basename(file)}: ${obj.kind}/${obj.metadata?.name}` });
  });
}

let bad = 0;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-validate-"));
const here = path.dirname(new URL(import.meta.url).pathname);
const tsFiles = [];
for (const [i, d] of docs.entries()) {
  const { apiVersion, kind } = d.obj;
  const dir = modelDir(apiVersion);
  let mod;
  try {
    mod = await import(`${dir}/${kind}`);
  } catch (e) {
    console.log(`FAIL ${d.where}: no schema for ${apiVersion} ${kind}`);
    bad++;
    continue;
  }
  try {
    new mod[kind](d.obj).validate();
  } catch (e) {
    console.log(`FAIL ${d.where}: schema: ${String(e.message || e).split("\n").join("; ")}`);
    bad++;
  }
  const f = path.join(tmp, `doc${i}.ts`);
  fs.writeFileSync(f, `import type { I${kind} } from "${dir}/${kind}";\n` +
    `export const doc: I${kind} = ${JSON.stringify(d.obj, null, 2)};\n`);
  tsFiles.push([f, d]);
}
const program = ts.createProgram(tsFiles.map(([f]) => f), {
  strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
  typeRoots: [], types: [], baseUrl: here, paths: { "*": [path.join(here, "node_modules/*")] },
});
const byFile = new Map(tsFiles);
for (const diag of ts.getPreEmitDiagnostics(program)) {
  const d = diag.file && byFile.get(diag.file.fileName);
  const msg = ts.flattenDiagnosticMessageText(diag.messageText, " ");
  let at = "";
  if (diag.file && diag.start !== undefined) {
    const { line } = diag.file.getLineAndCharacterOfPosition(diag.start);
    at = ` (line ${line + 1}: ${diag.file.text.split("\n")[line].trim()})`;
  }
  console.log(`FAIL ${d ? d.where : diag.file?.fileName ?? "tsc"}: fields: ${msg}${at}`);
  bad++;
}
fs.rmSync(tmp, { recursive: true, force: true });
for (const d of docs) console.log(`checked ${d.where} (${d.obj.apiVersion})`);
console.log(`${docs.length} objects, ${bad} problems`);
process.exit(bad ? 1 : 0);
