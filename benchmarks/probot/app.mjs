// The Probot peer of benchmarks/webhook.py: Probot verifies the signature and parses the
// delivery; the handler records its id (deduplicated by the primary key) in SQLite (WAL) or
// PostgreSQL, as the minimal Flask app does. Copied into the scratch folder where npm installed
// Probot, and run there: node app.mjs PORT DATABASE SCHEMA
import { createServer } from "node:http";
import { generateKeyPairSync } from "node:crypto";
import { Probot, createNodeMiddleware } from "probot";

const [port, database, schema] = process.argv.slice(2);
const CREATE = "CREATE TABLE IF NOT EXISTS deliveries (delivery_id TEXT PRIMARY KEY, " +
  "event TEXT NOT NULL, action TEXT, received_at TEXT NOT NULL)";

async function sqliteRecorder(path) {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  db.exec(CREATE);
  const insert = db.prepare("INSERT INTO deliveries VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING");
  return async (id, event, action) => insert.run(id, event, action, new Date().toISOString());
}

async function postgresRecorder(url, schema) {
  const { default: pg } = await import("pg");
  const pool = new pg.Pool({ connectionString: url, max: 8, options: `-c search_path=${schema}` });
  await pool.query(CREATE);
  const sql = "INSERT INTO deliveries VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING";
  return async (id, event, action) => pool.query(sql, [id, event, action, new Date().toISOString()]);
}

const record = database.startsWith("postgres")
  ? await postgresRecorder(database, schema)
  : await sqliteRecorder(database);
const { privateKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs1", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
});
const probot = new Probot({ appId: 1, privateKey, secret: process.env.BENCH_SECRET, logLevel: "warn" });
const appFn = (app) => {
  app.onAny(async (context) => {
    await record(context.id, context.name, context.payload.action ?? null);
  });
};
const middleware = await createNodeMiddleware(appFn, { probot, webhooksPath: "/webhook" });
createServer((request, response) => {
  if (request.url === "/healthz") {
    response.writeHead(200).end("ok");
    return;
  }
  middleware(request, response, () => response.writeHead(404).end());
}).listen(Number(port), "127.0.0.1");
