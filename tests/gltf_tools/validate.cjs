// Khronos glTF-Validator on each file given: prints one JSON line per file {file, errors, warnings, infos, messages}.
// Usage: node validate.cjs NODE_MODULES_DIR FILE...
const fs = require("fs");
const path = require("path");
const validator = require(path.resolve(process.argv[2], "gltf-validator"));

async function check(file) {
  const bytes = new Uint8Array(fs.readFileSync(file));
  const report = await validator.validateBytes(bytes, {
    uri: path.basename(file),
    maxIssues: 0,
    externalResourceFunction: (uri) =>
      new Promise((resolve, reject) => {
        fs.readFile(path.join(path.dirname(file), decodeURIComponent(uri)), (err, data) =>
          err ? reject(err.toString()) : resolve(new Uint8Array(data)));
      }),
  });
  const issues = report.issues;
  return {
    file,
    errors: issues.numErrors,
    warnings: issues.numWarnings,
    infos: issues.numInfos,
    messages: issues.messages.map((m) => `${["error", "warning", "info", "hint"][m.severity]} ${m.code} ${m.pointer || ""}: ${m.message}`),
  };
}

(async () => {
  for (const file of process.argv.slice(3)) {
    console.log(JSON.stringify(await check(file)));
  }
})().catch((e) => { console.error(String(e)); process.exit(1); });
