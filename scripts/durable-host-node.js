#!/usr/bin/env node
// A Lambda-compatible Invoke endpoint for durable functions written with AWS's JavaScript
// SDK (@aws/durable-execution-sdk-js), so they run on flowbroker with nothing from AWS.
//
//   node durable-host-node.js [--listen 127.0.0.1:9200] [--broker http://127.0.0.1:8080] [NAME=]FILE[:EXPORT]...
//
// Each FILE is a CommonJS module whose EXPORT (default `handler`, made with
// `withDurableExecution`) is served as the function named after the file (`orders.js` ->
// `orders`) at POST /2015-03-31/functions/{name}/invocations. The SDK reaches flowbroker
// through AWS_ENDPOINT_URL_LAMBDA (from --broker); a region and credentials are filled in
// when unset. Modules find the SDK through NODE_PATH (scripts/durable-sdk-node.sh prints it).
// A handler that throws is answered as Lambda does: 200 with X-Amz-Function-Error: Unhandled.
"use strict";
const http = require("node:http");
const path = require("node:path");
const crypto = require("node:crypto");

const args = process.argv.slice(2);
let listen = "127.0.0.1:9200";
let broker = process.env.AWS_ENDPOINT_URL_LAMBDA || "http://127.0.0.1:8080";
const specs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--listen") listen = args[++i];
  else if (args[i] === "--broker") broker = args[++i];
  else specs.push(args[i]);
}
if (specs.length === 0) {
  console.error("usage: durable-host-node.js [--listen HOST:PORT] [--broker URL] [NAME=]FILE[:EXPORT]...");
  process.exit(2);
}
process.env.AWS_ENDPOINT_URL_LAMBDA = broker;
process.env.AWS_REGION = process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || "us-east-1";
process.env.AWS_ACCESS_KEY_ID = process.env.AWS_ACCESS_KEY_ID || "flowbroker";
process.env.AWS_SECRET_ACCESS_KEY = process.env.AWS_SECRET_ACCESS_KEY || "flowbroker";

const handlers = {};
for (const spec of specs) {
  let name = null;
  let rest = spec;
  const eq = spec.indexOf("=");
  if (eq > 0 && !spec.slice(0, eq).includes("/")) {
    name = spec.slice(0, eq);
    rest = spec.slice(eq + 1);
  }
  const [file, exp = "handler"] = rest.split(":");
  const mod = require(path.resolve(file));
  if (typeof mod[exp] !== "function") {
    console.error(`error: ${file} exports no function ${exp} (export it made with withDurableExecution)`);
    process.exit(1);
  }
  handlers[name || path.basename(file).replace(/\.[cm]?js$/, "")] = mod[exp];
}

const PREFIX = "/2015-03-31/functions/";
const SUFFIX = "/invocations";
const server = http.createServer((req, res) => {
  const answer = (status, body, headers = {}) => {
    const data = Buffer.from(JSON.stringify(body === undefined ? null : body));
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": data.length, ...headers });
    res.end(data);
  };
  const p = req.url.split("?")[0];
  const name = p.startsWith(PREFIX) && p.endsWith(SUFFIX) ? p.slice(PREFIX.length, -SUFFIX.length) : null;
  const handler = name && handlers[name];
  if (req.method !== "POST" || !handler) {
    return answer(404, { Type: "User", message: `Function not found: ${p}` }, { "x-amzn-ErrorType": "ResourceNotFoundException" });
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const started = Date.now();
    const context = {
      awsRequestId: crypto.randomUUID(),
      functionName: name,
      functionVersion: "$LATEST",
      invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION}:000000000000:function:${name}`,
      memoryLimitInMB: "1024",
      getRemainingTimeInMillis: () => Math.max(0, 900000 - (Date.now() - started)),
      callbackWaitsForEmptyEventLoop: false,
    };
    try {
      const raw = Buffer.concat(chunks).toString() || "{}";
      answer(200, await handler(JSON.parse(raw), context));
    } catch (e) {
      answer(200, { errorMessage: String(e && e.message), errorType: (e && e.name) || "Error", stackTrace: String(e && e.stack).split("\n") },
        { "X-Amz-Function-Error": "Unhandled" });
    }
  });
});
const [host, port] = [listen.slice(0, listen.lastIndexOf(":")), Number(listen.slice(listen.lastIndexOf(":") + 1))];
server.listen(port, host || "127.0.0.1", () => {
  console.error(`durable-host-node: serving ${Object.keys(handlers).sort().join(", ")} on http://${listen}`);
});
