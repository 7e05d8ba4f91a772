import * as NodeContext from "@effect/platform-node/NodeContext"
import { FileSystem } from "@effect/platform/FileSystem"
import { assert, layer } from "@effect/vitest"
import { Effect, Fiber, Schedule, TestServices } from "effect"
import { setup, timingOut } from "./fixtures.js"

/**
 * Whether a process is alive. A zombie counts as dead: it has exited and only waits to be reaped (on this machine
 * PID 1 does not reap orphans, so killed grandchildren stay zombies).
 */
const isAlive = (pid: number) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    if (yield* Effect.orElseSucceed(fs.exists("/proc/self/stat"), () => false)) {
      const stat = yield* Effect.either(fs.readFileString(`/proc/${pid}/stat`))
      if (stat._tag === "Left") return false
      const state = stat.right.slice(stat.right.lastIndexOf(")") + 2, stat.right.lastIndexOf(")") + 3)
      return state !== "Z" && state !== "X"
    }
    return yield* Effect.sync(() => {
      try {
        process.kill(pid, 0)
        return true
      } catch {
        return false
      }
    })
  })

/** Waits (polling; a loaded machine may take its time) until every pid is dead; fails with the survivors otherwise. */
const assertAllDead = (pids: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const alive = yield* Effect.filter(pids, isAlive)
    if (alive.length > 0) return yield* Effect.fail(`still alive: ${alive.join(", ")}`)
  }).pipe(
    Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("30 seconds"))),
    Effect.orDie
  )

/** Reads a file the command writes, polling until it exists (the command writes it with an atomic `mv`). */
const waitForFile = (file: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    return yield* fs.readFileString(file).pipe(
      Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("10 seconds"))),
      Effect.orDie
    )
  })

const pidsOf = (text: string) => text.trim().split(/\s+/).map(Number)

/** The live processes whose command line has `token` as an argument (found through `/proc`). */
const withToken = (token: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    const names = (yield* Effect.orDie(fs.readDirectory("/proc"))).filter((name) => /^\d+$/.test(name))
    const found = yield* Effect.forEach(names, (name) =>
      Effect.gen(function*() {
        const cmdline = yield* Effect.either(fs.readFileString(`/proc/${name}/cmdline`))
        if (cmdline._tag === "Left" || !cmdline.right.split("\u0000").includes(token)) return []
        return (yield* isAlive(Number(name))) ? [Number(name)] : []
      }))
    return found.flat()
  })

/**
 * The three ways a descendant leaves the command's process group without starting a new session (ADR 0012):
 * GNU `timeout` in the background (it calls `setpgid`), `bash` job control (`set -m`), and `setpgid` itself.
 * Each starts `sleep <token>` in a group of its own.
 */
const escapes: ReadonlyArray<readonly [string, (token: string) => string]> = [
  ["GNU timeout in the background", (token) => `timeout 300 sleep ${token} &`],
  ["bash set -m", (token) => `bash -c 'set -m; sleep ${token} & true';`],
  ["setpgid", (token) => `perl -e 'setpgrp(0, 0); exec "sleep", "${token}"' &`]
]

/** Waits until the escapee runs (so the test proves it started), then returns its pids. */
const started = (token: string) =>
  withToken(token).pipe(
    Effect.filterOrFail((pids) => pids.length > 0, () => `no process with ${token} yet`),
    Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("10 seconds"))),
    Effect.orDie
  )

/** Kills whatever a failed test left behind. */
const reapToken = (token: string) =>
  Effect.addFinalizer(() =>
    Effect.flatMap(withToken(token), (pids) =>
      Effect.sync(() =>
        pids.forEach((pid) => {
          try {
            process.kill(pid, "SIGKILL")
          } catch {
            // gone
          }
        })
      ))
  )

/**
 * A shell line that starts two background sleeps, prints "started", records `sh`'s pid and theirs in `pids`, and
 * waits. (It prints first, so once `pids` is there its output is in the pipe.)
 */
const tree = "sleep 30 & a=$!; sleep 30 & b=$!; echo started; echo \"$$ $a $b\" > pids.tmp && mv pids.tmp pids; wait"

// Real processes, real clock: the test services are left out.
layer(NodeContext.layer, { excludeTestServices: true })("WorkspaceTools shell", (it) => {
  it.scoped("captures stdout and stderr and reports the exit code", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      assert.strictEqual(
        yield* h.text("shell", { command: "echo out; echo err >&2; exit 3" }),
        "out\nerr\n[exit code: 3]"
      )
      assert.strictEqual(yield* h.text("shell", { command: "true" }), "(no output)\n[exit code: 0]")
      // argv runs without a shell: no word splitting, no expansion.
      assert.strictEqual(
        yield* h.text("shell", { argv: ["printf", "%s|", "a b", "$HOME"] }),
        "a b|$HOME|\n[exit code: 0]"
      )
      // Standard input is empty, so a reader does not hang.
      assert.strictEqual(yield* h.text("shell", { argv: ["cat"] }), "(no output)\n[exit code: 0]")
      assert.strictEqual(
        yield* h.text("shell", { command: "kill -9 $$" }),
        "(no output)\n[terminated by signal SIGKILL]"
      )
    }))

  it.scoped("runs in a working directory confined to the workspace", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fs = yield* FileSystem
      yield* h.write("sub/file.txt", "x")
      const real = yield* fs.realPath(h.abs("sub"))
      assert.strictEqual(yield* h.text("shell", { command: "pwd", cwd: "sub" }), `${real}\n[exit code: 0]`)
      assert.strictEqual(yield* h.text("shell", { argv: ["ls"], cwd: "sub" }), "file.txt\n[exit code: 0]")
      assert.strictEqual((yield* h.failure("shell", { command: "pwd", cwd: ".." })).reason, "PathEscape")
      assert.strictEqual((yield* h.failure("shell", { command: "pwd", cwd: "/" })).reason, "PathEscape")
      assert.strictEqual((yield* h.failure("shell", { command: "pwd", cwd: "sub/file.txt" })).reason, "NotADirectory")
      assert.strictEqual((yield* h.failure("shell", { command: "pwd", cwd: "missing" })).reason, "NotFound")
    }))

  it.scoped("refuses bad arguments and reports a missing program", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      assert.strictEqual((yield* h.failure("shell", {})).reason, "InvalidArgument")
      assert.strictEqual((yield* h.failure("shell", { command: "ls", argv: ["ls"] })).reason, "InvalidArgument")
      assert.strictEqual((yield* h.failure("shell", { command: "  " })).reason, "InvalidArgument")
      const missing = yield* h.failure("shell", { argv: ["harness-no-such-program"] })
      assert.strictEqual(missing.reason, "NotFound")
      assert.include(missing.message, "no such program")
    }))

  it.scoped("keeps the tail of long output and marks the cut", () =>
    Effect.gen(function*() {
      const h = yield* setup({ maxShellOutputBytes: 100 })
      const result = yield* h.text("shell", { command: "seq 1 2000" })
      assert.match(
        result,
        /^… \[truncated: the first [\d.]+ KiB of [\d.]+ KiB of output omitted, showing the last 100 B; redirect/
      )
      assert.isTrue(result.endsWith("\n1999\n2000\n[exit code: 0]"))
      assert.isBelow(result.length, 400)
    }))

  it.scoped("the truncation marker states the whole cut: what the byte limit dropped and what the character limit cut", () =>
    Effect.gen(function*() {
      const h = yield* setup({ maxShellOutputBytes: 5000, maxOutputChars: 600 })
      const result = yield* h.text("shell", { command: "head -c 2000000 /dev/zero | tr '\\0' a" })
      const marker =
        /^… \[truncated: the first ([\d.]+) MiB of ([\d.]+) MiB of output omitted, showing the last (\d+) B;/
          .exec(result)
      assert.isNotNull(marker, result.slice(0, 200))
      const shown = Number(marker![3])
      // 2 000 000 bytes in all: the marker counts every one not shown (1.9 MiB), not only the last cut's.
      assert.strictEqual(marker![1], ((2_000_000 - shown) / (1024 * 1024)).toFixed(1))
      assert.strictEqual(marker![2], (2_000_000 / (1024 * 1024)).toFixed(1))
      assert.strictEqual(result.split("\n")[1], "a".repeat(shown))
      assert.isTrue(result.endsWith("\n[exit code: 0]"))
      assert.isAtMost(result.length, 600)
    }))

  it.scoped("interruption (cancel) kills the whole process tree", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fiber = yield* Effect.fork(h.run("shell", { command: tree }))
      const pids = pidsOf(yield* waitForFile(h.abs("pids")))
      assert.strictEqual(pids.length, 3)
      for (const pid of pids) assert.isTrue(yield* isAlive(pid), `pid ${pid} runs before the cancel`)
      yield* Fiber.interrupt(fiber)
      yield* assertAllDead(pids)
    }))

  it.scoped("processes that ignore SIGTERM get SIGKILL after the grace period", () =>
    Effect.gen(function*() {
      const h = yield* setup({ shellKillGrace: "200 millis" })
      const stubborn = "trap '' TERM; sleep 30 & echo \"$$ $!\" > pids.tmp && mv pids.tmp pids; wait"
      const fiber = yield* Effect.fork(h.run("shell", { command: stubborn }))
      const pids = pidsOf(yield* waitForFile(h.abs("pids")))
      yield* Fiber.interrupt(fiber)
      yield* assertAllDead(pids)
    }))

  it.scoped("background jobs do not outlive a command that exits", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const result = yield* h.text("shell", { command: "sleep 30 & echo $! > bg; echo done" })
      assert.strictEqual(result, "done\n[exit code: 0]")
      yield* assertAllDead(pidsOf(yield* waitForFile(h.abs("bg"))))
    }))

  let serial = 0
  for (const [name, escape] of escapes) {
    const tokenFor = (mode: string) => `${3000 + (serial++)}.${process.pid}${mode.length}`

    it.scoped(`${name}: the escapee dies when the command exits`, () =>
      Effect.gen(function*() {
        const h = yield* setup()
        const token = tokenFor("exit")
        yield* reapToken(token)
        // The command waits until its escapee runs, then exits at once.
        const command = `${escape(token)} while ! pgrep -f '^sleep ${token}$' >/dev/null; do sleep 0.02; done; echo up`
        assert.strictEqual(yield* h.text("shell", { command }), "up\n[exit code: 0]")
        yield* assertAllDead(yield* withToken(token))
        assert.deepStrictEqual(yield* withToken(token), [])
      }))

    it.scoped(`${name}: the escapee dies on cancel`, () =>
      Effect.gen(function*() {
        const h = yield* setup()
        const token = tokenFor("cancel")
        yield* reapToken(token)
        const fiber = yield* Effect.fork(h.run("shell", { command: `${escape(token)} sleep 60` }))
        const pids = yield* started(token)
        yield* Fiber.interrupt(fiber)
        yield* assertAllDead(pids)
      }))
  }
})

// Real processes, the test clock: a timeout is decided by the clock the test moves, never by the machine's speed.
layer(NodeContext.layer)("WorkspaceTools shell timeouts (TestClock)", (it) => {
  it.scoped("a timeout kills the whole process tree", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const { readied: pids, result: error, took } = yield* timingOut(
        h.failure("shell", { command: tree, timeoutSeconds: 2 }),
        2,
        Effect.map(waitForFile(h.abs("pids")), pidsOf)
      )
      assert.strictEqual(error.reason, "Timeout")
      assert.include(error.message, "timed out after 2s")
      assert.include(error.message, "started")
      // Killed at the timeout: the 30 s sleeps were never waited for.
      assert.isBelow(took, 30_000)
      assert.strictEqual(pids.length, 3)
      yield* TestServices.provideLive(assertAllDead(pids))
    }))

  let serial = 0
  for (const [name, escape] of escapes) {
    it.scoped(`${name}: the escapee dies on timeout`, () =>
      Effect.gen(function*() {
        const h = yield* setup()
        const token = `${3900 + (serial++)}.${process.pid}7`
        yield* reapToken(token)
        const { readied: pids, result: error } = yield* timingOut(
          h.failure("shell", {
            // Waits until its escapee runs, then sleeps past the timeout.
            command: `${escape(token)} while ! pgrep -f '^sleep ${token}$' >/dev/null; do sleep 0.02; done; sleep 60`,
            timeoutSeconds: 6
          }),
          6,
          started(token)
        )
        assert.strictEqual(error.reason, "Timeout")
        yield* TestServices.provideLive(assertAllDead(pids))
      }))
  }
})
