/**
 * `--remote`: the CLI's commands against `harness serve`, both real child processes on loopback. The scenarios are
 * the ones the local commands pass (`run.test.ts`), run once here and once against the server, with the same
 * answers expected; then the server is killed with SIGKILL while a chat follows it, and the chat's event stream
 * resumes on the restarted server with no event shown twice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { harness, serve, tempDir } from "./support.js"

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
  for (
    const line of [
      "› list the files",
      "+ grep TODO (queued)",
      "+ context (the model sees it at its next step): the user is on a phone",
      "Noted: “the user is on a phone”.",
      "1 session (last active last):",
      "/goal set <objective> | show | pause | resume | clear",
      "⚙ [1] list_dir()",
      "⚙ [2] grep(",
      "notes.txt:2: TODO: write the tests"
    ]
  ) assert.include(result.stdout, line, mode.name)
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
