/**
 * `--remote`: the CLI's commands against `harness serve`, both real child processes on loopback. The scenarios are
 * the ones the local commands pass (`run.test.ts`), run once here and once against the server, with the same
 * answers expected; then the server is killed with SIGKILL while a chat follows it, and the chat's event stream
 * resumes on the restarted server with no event shown twice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { harness, lineChatLines, serve, tempDir } from "./support.js"

const token = "remote-secret"
const tokens = { HARNESS_SERVER_TOKENS: `cli:send:${token}` }

const workspace = () => {
  const [dir, cleanup] = tempDir()
  writeFileSync(`${dir}/notes.txt`, "first line\nTODO: write the tests\n")
  return [dir, cleanup] as const
}

/** Runs `f` with a fresh workspace and `harness serve` in it (memory store), stopped and removed afterwards. */
const withServer = <A>(f: (dir: string, url: string) => Promise<A>) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const [dir, cleanup] = workspace()
      const server = await serve(dir, tokens, ["--store", "memory"])
      return { dir, cleanup, server }
    }),
    ({ dir, server }) => Effect.promise(() => f(dir, server.url)),
    ({ cleanup, server }) => Effect.promise(() => server.stop().then(cleanup))
  )

/** How a scenario reaches the agent: the flags of the local mode, or `--remote` and its token. */
interface Mode {
  readonly name: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
}

const local: Mode = { name: "local", args: ["--store", "memory"], env: {} }
const remote = (url: string): Mode => ({
  name: "remote",
  args: ["--remote", url],
  env: { HARNESS_REMOTE_TOKEN: token }
})

/** The line-mode chat scenario of `run.test.ts`: the same input, the same lines on the screen. */
const chatScenario = async (dir: string, mode: Mode) => {
  const result = await harness(["chat", ...mode.args], {
    cwd: dir,
    env: { NO_COLOR: "", ...mode.env },
    input: "list the files\n+grep TODO\n/inject the user is on a phone\n/sessions\n/help\n"
  })
  assert.strictEqual(result.code, 0, `${mode.name}: ${result.stderr}`)
  assert.notInclude(result.stdout, "\x1b[")
  for (const line of lineChatLines) assert.include(result.stdout, line, mode.name)
  return /bye — session ([0-9a-f-]{36})/.exec(result.stdout)?.[1]
}

/** `run.test.ts`'s first scenario: an answer, a real workspace tool, the session listed afterwards. */
const runScenario = async (dir: string, mode: Mode) => {
  const result = await harness(["run", ...mode.args, "list", "the", "files"], { cwd: dir, env: mode.env })
  assert.strictEqual(result.code, 0, `${mode.name}: ${result.stderr}`)
  assert.include(result.stdout, "Let me use list_dir.")
  assert.include(result.stdout, "notes.txt")
  assert.include(result.stderr, "→ list_dir()")
  return /session ([0-9a-f-]{36}) · /.exec(result.stderr)?.[1]
}

describe("--remote", { timeout: 240_000 }, () => {
  it.live("chat --remote passes the line-mode chat scenario local mode passes: steer, queue, inject, tools, /sessions (R197)", () =>
    withServer(async (dir, url) => {
      await chatScenario(dir, local)
      const id = await chatScenario(dir, remote(url))
      assert.ok(id !== undefined)
      // The session is the server's.
      const listed = await harness(["sessions", "list", "--remote", url], { cwd: dir, env: remote(url).env })
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.include(listed.stdout, id)
    }))

  it.live("run --remote answers as run does, the tools run on the server's workspace, and the session is listed there (R197)", () =>
    withServer(async (dir, url) => {
      await runScenario(dir, local)
      const id = await runScenario(dir, remote(url))
      const listed = await harness(["sessions", "list", "--remote", url], { cwd: dir, env: remote(url).env })
      assert.include(listed.stdout, "1 session (last active last):")
      assert.include(listed.stdout, id!)
      // Resume it over the server too: the same session id, one more turn.
      const resumed = await harness(["sessions", "resume", "--remote", url, id!.slice(0, 8), "grep", "TODO"], {
        cwd: dir,
        env: remote(url).env
      })
      assert.strictEqual(resumed.code, 0, resumed.stderr)
      assert.include(resumed.stderr, `session ${id}`)
      assert.include(resumed.stdout, "notes.txt:2: TODO: write the tests")
    }))

  it.live("refusals are said in words: no token, a wrong token, a server that is not there (exit codes 2, 1, 1) (R197)", () =>
    withServer(async (dir, url) => {
      const none = await harness(["run", "--remote", url, "hello"], { cwd: dir })
      assert.strictEqual(none.code, 2)
      assert.include(none.stderr, "HARNESS_REMOTE_TOKEN")
      const wrong = await harness(["run", "--remote", url, "--remote-token", "nope", "hello"], { cwd: dir })
      assert.strictEqual(wrong.code, 1)
      assert.include(wrong.stderr, "the server refused")
      assert.notInclude(wrong.stderr, "nope")
      const away = await harness(["run", "--remote", "http://127.0.0.1:1", "hello"], {
        cwd: dir,
        env: { HARNESS_REMOTE_TOKEN: token }
      })
      assert.strictEqual(away.code, 1)
      assert.include(away.stderr, "cannot be reached")
    }))
})

describe("sessions … --remote", { timeout: 480_000 }, () => {
  const admin = "admin-secret"
  /** `harness serve` over a SQLite file in a fresh workspace, with a send token and an admin token. */
  const withSqliteServer = <A>(f: (dir: string, url: string, store: string) => Promise<A>) =>
    Effect.acquireUseRelease(
      Effect.promise(async () => {
        const [dir, cleanup] = workspace()
        const store = `sqlite:${dir}/serve.db`
        const server = await serve(dir, { HARNESS_SERVER_TOKENS: `cli:send:${token},ops:admin:${admin}` }, [
          "--store",
          store
        ])
        return { dir, cleanup, server, store }
      }),
      ({ dir, server, store }) => Effect.promise(() => f(dir, server.url, store)),
      ({ cleanup, server }) => Effect.promise(() => server.stop().then(cleanup))
    )

  it.live("show and export print what they print from the store; fork cuts at a turn/end and names --remote; rm needs the admin scope; unknown ids are refused in words with exit code 1, as locally (R240, R241)", () =>
    withSqliteServer(async (dir, url, store) => {
      const env = { HARNESS_REMOTE_TOKEN: token }
      const ran = await harness(["run", "--remote", url, "list", "the", "files"], { cwd: dir, env })
      assert.strictEqual(ran.code, 0, ran.stderr)
      const id = /session ([0-9a-f-]{36}) · /.exec(ran.stderr)![1]!
      const prefix = id.slice(0, 8)

      // The server's answers are the store's, line for line and byte for byte (all at once: a child process each).
      const views = [["show"], ["export"], ["export", "--format", "md"]]
      const [compared, forked, early] = await Promise.all([
        Promise.all(views.map((view) =>
          Promise.all([
            harness(["sessions", ...view, "--remote", url, prefix], { cwd: dir, env }),
            harness(["sessions", ...view, "--store", store, prefix], { cwd: dir })
          ])
        )),
        // Fork: at the last turn/end; the printed command continues it on the same server.
        harness(["sessions", "fork", "--remote", url, prefix], { cwd: dir, env }),
        harness(["sessions", "fork", "--remote", url, "--at", "0", prefix], { cwd: dir, env })
      ])
      for (const [i, [remote, local]] of compared.entries()) {
        assert.strictEqual(remote.code, 0, remote.stderr)
        assert.strictEqual(local.code, 0, local.stderr)
        assert.strictEqual(remote.stdout, local.stdout, views[i]!.join(" "))
      }
      assert.include(compared[0]![0].stdout, "tool call list_dir(")
      assert.include(compared[0]![0].stdout, "the log checks clean")
      assert.strictEqual(forked.code, 0, forked.stderr)
      const [, from, cut, child] = /forked (\S+) at #(\d+) into (\S+) \((\d+) events\)/.exec(forked.stdout)!
      assert.strictEqual(from, id)
      assert.include(forked.stdout, `continue it: harness sessions resume --remote ${url} ${child}`)
      assert.strictEqual(early.code, 1)
      assert.include(early.stderr, `session ${id} has no turn boundary at or before #0`)

      // rm: a send token is refused in words; an admin token removes it; afterwards it is gone.
      const [childShown, refused] = await Promise.all([
        harness(["sessions", "show", "--remote", url, child!], { cwd: dir, env }),
        harness(["sessions", "rm", "--remote", url, child!], { cwd: dir, env })
      ])
      assert.include(childShown.stdout, `forked from ${id} at #${cut}`)
      assert.strictEqual(refused.code, 1)
      assert.include(refused.stderr, "the server refused: token cli lacks the admin scope")
      assert.notInclude(refused.stderr, token)
      const removed = await harness(["sessions", "rm", "--remote", url, "--remote-token", admin, child!], {
        cwd: dir
      })
      assert.strictEqual(removed.code, 0, removed.stderr)
      assert.strictEqual(removed.stdout, `removed session ${child}\n`)

      // An unknown id: every command says so, with the exit code of a local one (1).
      const unknown = await Promise.all(
        ["show", "export", "fork", "rm"].map((command) =>
          Promise.all([
            harness(["sessions", command, "--remote", url, child!], { cwd: dir, env }),
            harness(["sessions", command, "--store", "memory", child!], { cwd: dir })
          ])
        )
      )
      for (const [remote, local] of unknown) {
        assert.strictEqual(remote.code, 1, remote.stderr)
        assert.strictEqual(local.code, 1, local.stderr)
        assert.include(remote.stderr, `no session "${child}" on ${url}`)
      }
    }))

  it.live("the chat's /goal over --remote answers as a local chat: set, clear, show, a bad verb, no goal (R242)", () =>
    withServer(async (dir, url) => {
      const screens = []
      for (const mode of [local, remote(url)]) {
        const result = await harness(["chat", ...mode.args], {
          cwd: dir,
          env: { NO_COLOR: "", ...mode.env },
          input: "/goal set list the files\n/goal clear\n/goal show\n/goal frobnicate\n/goal pause\n"
        })
        assert.strictEqual(result.code, 0, `${mode.name}: ${result.stderr}`)
        assert.match(result.stdout, /Created goal [0-9a-f]+: list the files/, mode.name)
        assert.include(result.stdout, "Goal cleared.", mode.name)
        assert.include(result.stdout, "No goal.", mode.name)
        assert.include(result.stdout, `unknown /goal command "frobnicate": /goal set <objective>`, mode.name)
        assert.include(result.stdout, "there is no goal", mode.name)
        screens.push(result.stdout)
      }
      assert.notInclude(screens[1], "not available with --remote")
    }))
})
