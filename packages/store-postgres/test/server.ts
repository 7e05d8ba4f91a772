/**
 * A throwaway PostgreSQL server: `initdb` into a temporary directory, `pg_ctl start` on a free loopback port (its
 * unix socket in the same directory), stopped and deleted by `stop`. As root, the server runs as the `postgres`
 * user (`runuser`), since PostgreSQL refuses to run as root. Used by the tests' global setup and by the W6 bench.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

const bin = process.env["HARNESS_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** A running server: the URL of its `postgres` database, and how to stop it. */
export interface TestServer {
  readonly url: string
  readonly stop: () => void
}

/** Starts a server; fails with a message saying how to install PostgreSQL when it is missing. */
export const startServer = async (): Promise<TestServer> => {
  if (!fs.existsSync(path.join(bin, "pg_ctl")) || !fs.existsSync(path.join(bin, "initdb"))) {
    throw new Error(
      `PostgreSQL 15 is needed for the @harness/store-postgres tests and was not found in ${bin}. ` +
        "Install it with `apt-get update && apt-get install -y postgresql` (Debian; `.ci/run` does this), " +
        "or point HARNESS_PG_BIN at the directory holding initdb and pg_ctl."
    )
  }
  const asRoot = process.getuid?.() === 0
  const run = (command: string, args: ReadonlyArray<string>) =>
    execFileSync(
      asRoot ? "runuser" : path.join(bin, command),
      asRoot ? ["-u", "postgres", "--", path.join(bin, command), ...args] : [...args],
      { stdio: "pipe" }
    )
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "harness-pg-"))
  if (asRoot) execFileSync("chown", ["postgres:", dir])
  const data = path.join(dir, "data")
  const port = await freePort()
  try {
    run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"])
    run("pg_ctl", [
      "-D",
      data,
      "-l",
      path.join(dir, "server.log"),
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
      "-w",
      "start"
    ])
  } catch (error) {
    const log = fs.existsSync(path.join(dir, "server.log")) ? fs.readFileSync(path.join(dir, "server.log"), "utf8") : ""
    fs.rmSync(dir, { recursive: true, force: true })
    throw new Error(`cannot start the test PostgreSQL server: ${String(error)}\n${log}`)
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}
