/**
 * `harness run`, `config` and the error paths, as a user meets them: the real executable in a temporary
 * workspace, over the offline model or a fake chat-completions server on loopback.
 */
import { assert, describe, it } from "@effect/vitest"
import { AgentEvent } from "@harness/domain"
import { ChatCompletions } from "@harness/llm"
import { Effect, Schema } from "effect"
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as RunEvent from "../src/RunEvent.js"
import * as Settings from "../src/Settings.js"
import { bin, chatChunk, cleanEnv, harness, lineChatLines, tempDir } from "./support.js"

const decodeEvent = Schema.decodeUnknownSync(Schema.parseJson(AgentEvent.AgentEvent))
const decodeRunEvent = Schema.decodeUnknownSync(Schema.parseJson(RunEvent.RunEvent))

const workspace = () => {
  const [dir, cleanup] = tempDir()
  writeFileSync(join(dir, "notes.txt"), "first line\nTODO: write the tests\n")
  return [dir, cleanup] as const
}

const live = <A>(f: (dir: string) => Promise<A>) =>
  Effect.acquireUseRelease(
    Effect.sync(workspace),
    ([dir]) => Effect.promise(() => f(dir)),
    ([, cleanup]) => Effect.sync(cleanup)
  )

describe("harness run (offline model)", { timeout: 180_000 }, () => {
  it.live("answers, calls a real workspace tool, stores the session in SQLite (R28 followup; R100 log)", () =>
    live(async (dir) => {
      const result = await harness(["run", "list", "the", "files"], { cwd: dir })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.include(result.stdout, "Let me use list_dir.")
      assert.include(result.stdout, "notes.txt")
      assert.include(result.stderr, "→ list_dir()")
      assert.match(result.stderr, /session [0-9a-f-]{36} · sqlite:.*\.harness\/sessions\.db/)

      const listed = await harness(["sessions", "list"], { cwd: dir })
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.include(listed.stdout, "1 session")
      assert.include(listed.stdout, "\"list the files\"")
    }))

  it.live("R162, R163: --max-steps stops a turn at its step limit; run and sessions show say so in words", () =>
    live(async (dir) => {
      const result = await harness(["run", "--max-steps", "1", "list", "the", "files"], { cwd: dir })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.include(result.stderr, "→ list_dir()")
      assert.include(result.stderr, "turn 1 ends: budget: stopped at its step limit (1 step)")
      // The tool ran, but the model never got a second step to answer with its result.
      assert.notInclude(result.stdout, "notes.txt")
      const id = /session ([0-9a-f-]{36})/.exec(result.stderr)?.[1]
      const shown = await harness(["sessions", "show", id!], { cwd: dir })
      assert.strictEqual(shown.code, 0, shown.stderr)
      assert.include(shown.stdout, "turn 1 ends: budget: stopped at its step limit (1 step)")
    }))

  it.live("reads the prompt from standard input with -, and --json prints every event as decodable NDJSON", () =>
    live(async (dir) => {
      const result = await harness(["run", "--json", "-"], { cwd: dir, input: "grep TODO\n" })
      assert.strictEqual(result.code, 0, result.stderr)
      const [first, ...rest] = result.stdout.trim().split("\n")
      assert.strictEqual(decodeRunEvent(first).type, "run/session")
      const events = rest.map((line) => decodeEvent(line))
      const types = events.map((e) => (e.type === "session/event" ? e.event.type : e.type))
      assert.strictEqual(types[0], "agent/inbox/enqueue")
      assert.include(types, "tool/call")
      assert.include(types, "tool/result")
      assert.strictEqual(types.at(-1), "agent/status")
      const result_ = events.find((e) => e.type === "session/event" && e.event.type === "tool/result")
      assert.isDefined(result_)
      assert.include(JSON.stringify(result_), "notes.txt:2: TODO: write the tests")
      const settled = events.filter((e) => e.type === "agent/settled")
      assert.deepStrictEqual(settled.map((e) => e.reason.kind), ["completed"])
    }))

  it.live("a write is denied without --yes (a denial is a tool result, R69; exit code 1, #37.8) and done with it", () =>
    live(async (dir) => {
      const denied = await harness(["run", "write out.txt: hello"], { cwd: dir })
      assert.strictEqual(denied.code, 1, denied.stderr)
      assert.include(denied.stdout, "needs approval: run again with --yes")
      assert.include(denied.stderr, "harness: a call was denied: write_file({\"path\":\"out.txt\"")
      const allowed = await harness(["run", "--yes", "write out.txt: hello"], { cwd: dir })
      assert.strictEqual(allowed.code, 0, allowed.stderr)
      const { readFileSync } = await import("node:fs")
      assert.strictEqual(readFileSync(join(dir, "out.txt"), "utf8"), "hello\n")
    }))
})

describe("follow-up commands and what stays off the terminal (#37.5, #37.7, #37.8)", { timeout: 300_000 }, () => {
  it.live("the printed `sessions show` repeats the --store or --workspace in force, and works as printed; none for memory", () =>
    live(async (dir) => {
      const store = join(dir, "elsewhere")
      const withStore = await harness(["run", "--store", `jsonl:${store}`, "hello"], { cwd: dir })
      assert.strictEqual(withStore.code, 0, withStore.stderr)
      const printed = (stderr: string) => /· harness (sessions show .*)$/m.exec(stderr)?.[1]?.split(" ")
      const first = printed(withStore.stderr)
      assert.deepStrictEqual(first?.slice(0, 4), ["sessions", "show", "--store", `jsonl:${store}`])
      const shown = await harness(first!, { cwd: tmpdir() })
      assert.strictEqual(shown.code, 0, shown.stderr)
      assert.include(shown.stdout, "user: hello")

      // The default store lives in the workspace: from another directory, the hint names the workspace.
      const inWorkspace = await harness(["run", "--workspace", dir, "hello"], { cwd: tmpdir() })
      assert.strictEqual(inWorkspace.code, 0, inWorkspace.stderr)
      const second = printed(inWorkspace.stderr)
      assert.deepStrictEqual(second?.slice(0, 4), ["sessions", "show", "--workspace", dir])
      const again = await harness(second!, { cwd: tmpdir() })
      assert.strictEqual(again.code, 0, again.stderr)

      const memory = await harness(["run", "--store", "memory", "hello"], { cwd: dir })
      assert.strictEqual(memory.code, 0, memory.stderr)
      assert.notInclude(memory.stderr, "sessions show")
      assert.include(memory.stderr, "memory (gone when this command ends)")
    }))

  it.live("terminal control sequences from a file and a tool show visibly in run, sessions show and export --format md; JSON stays exact", () =>
    live(async (dir) => {
      const evil = "title\x1b]0;pwned\x07 clear\x1b[2J clip\x1b]52;c;aGk=\x07 end"
      writeFileSync(join(dir, "evil.txt"), `${evil}\n`)
      const store = `jsonl:${join(dir, "store")}`
      const result = await harness(["run", "--store", store, "read evil.txt"], { cwd: dir })
      assert.strictEqual(result.code, 0, result.stderr)
      for (const text of [result.stdout, result.stderr]) {
        assert.notInclude(text, "\x1b")
        assert.notInclude(text, "\x07")
      }
      assert.include(result.stdout, "title\\x1b]0;pwned\\x07 clear\\x1b[2J")
      const id = /sessions show --store \S+ ([0-9a-f-]{36})/.exec(result.stderr)?.[1]
      assert.isDefined(id, result.stderr)
      const show = await harness(["sessions", "show", "--store", store, id!], { cwd: dir })
      const md = await harness(["sessions", "export", "--format", "md", "--store", store, id!], { cwd: dir })
      for (const out of [show, md]) {
        assert.strictEqual(out.code, 0, out.stderr)
        assert.notInclude(out.stdout, "\x1b")
        assert.include(out.stdout, "\\x1b]0;pwned")
      }
      // The JSON Lines export is the stored records, exact: the escape is there, JSON-escaped.
      const jsonl = await harness(["sessions", "export", "--store", store, id!], { cwd: dir })
      assert.strictEqual(jsonl.code, 0, jsonl.stderr)
      assert.isTrue(
        jsonl.stdout.split("\n").some((line) =>
          line !== "" && JSON.stringify(JSON.parse(line)).includes("\\u001b]0;pwned")
        )
      )
      const json = await harness(["run", "--json", "--store", store, "read evil.txt"], { cwd: dir })
      assert.strictEqual(json.code, 0, json.stderr)
      assert.notInclude(json.stdout, "\x1b")
      assert.isTrue(
        json.stdout.split("\n").some((line) =>
          line !== "" && JSON.stringify(JSON.parse(line)).includes(JSON.stringify(evil.slice(0, 12)).slice(1, -1))
        )
      )
    }))

  it.live("`sessions export <id> | head` ends quietly; a store that cannot be opened says why with no stack trace", () =>
    live(async (dir) => {
      const store = `jsonl:${join(dir, "store")}`
      const long = `${"a long prompt ".repeat(20_000)}\n`
      const made = await harness(["run", "--json", "--store", store, "-"], { cwd: dir, input: long })
      assert.strictEqual(made.code, 0, made.stderr)
      const id = JSON.parse(made.stdout.split("\n")[0]!).session as string
      const piped = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn("bash", [
          "-c",
          `set -o pipefail; "${process.execPath}" "${bin}" sessions export --store ${store} ${id} | head -c 10 >/dev/null`
        ], {
          cwd: dir,
          env: cleanEnv()
        })
        let stderr = ""
        child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text))
        child.on("close", (code) => resolve({ code, stderr }))
      })
      assert.strictEqual(piped.stderr, "")
      assert.strictEqual(piped.code, 0)

      // A file that is not a database: the driver's error carries a stack trace through the host's files.
      writeFileSync(join(dir, "not-a-db"), "x".repeat(200))
      const broken = await harness(["sessions", "list", "--store", `sqlite:${join(dir, "not-a-db")}`], { cwd: dir })
      assert.strictEqual(broken.code, 1)
      assert.include(broken.stderr, "harness: cannot open the session store")
      assert.notMatch(broken.stderr, /\bat .*\.(js|ts):\d+/) // no stack trace
      assert.notInclude(broken.stderr, "node_modules")
      assert.strictEqual(broken.stderr.trim().split("\n").length, 1, broken.stderr)
    }))
})

describe("harness run --goal (offline model)", { timeout: 180_000 }, () => {
  it.live("runs goal rounds until the goal is complete (two on the offline model); exit code 0 (R122–R124)", () =>
    live(async (dir) => {
      const result = await harness(["run", "--goal", "list the files"], { cwd: dir })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.match(result.stderr, /goal [0-9a-f]+: list the files \(at most 256 rounds\)/)
      assert.include(result.stdout, "Round 1: working on “list the files”. Let me use list_dir.")
      assert.include(result.stdout, "notes.txt")
      assert.include(result.stderr, "→ update_goal({\"action\":\"complete\"})")
      assert.include(result.stderr, "goal complete after 2 round(s)")
      const id = /sessions show ([0-9a-f-]{36})/.exec(result.stderr)?.[1]
      const show = await harness(["sessions", "show", id!], { cwd: dir })
      assert.strictEqual(show.code, 0, show.stderr)
      assert.include(show.stdout, "goal round 1: list the files")
      assert.include(show.stdout, "goal round 2: list the files")
      assert.include(show.stdout, "goal complete → complete: list the files")
      assert.include(show.stdout, "the log checks clean")
    }))

  it.live("a goal that runs out of rounds is blocked: exit code 1 and what to do; --max-rounds needs --goal (exit 2)", () =>
    live(async (dir) => {
      const blocked = await harness(["run", "--goal", "--max-rounds", "1", "list the files"], { cwd: dir })
      assert.strictEqual(blocked.code, 1, blocked.stderr)
      assert.include(blocked.stderr, "goal blocked after 1 round(s): round-limit")
      assert.match(blocked.stderr, /harness: the goal is blocked \(.*\): look at it with harness sessions show/)
      const lone = await harness(["run", "--max-rounds", "3", "hello"], { cwd: dir })
      assert.strictEqual(lone.code, 2)
      assert.include(lone.stderr, "--max-rounds only applies with --goal")
    }))
})

describe("harness chat without a terminal", { timeout: 180_000 }, () => {
  it.live("reads one request per line and prints plain lines (no escape codes), then leaves at the end of input", () =>
    live(async (dir) => {
      const result = await harness(["chat", "--store", "memory"], {
        cwd: dir,
        env: { NO_COLOR: "" },
        input: "list the files\n+grep TODO\n/inject the user is on a phone\n/goal show\n/sessions\n/help\n"
      })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.notInclude(result.stdout, "\x1b[")
      for (
        const line of [
          "harness chat — offline model (a local simulator: no API key, no network)",
          "No goal.",
          ...lineChatLines
        ]
      ) assert.include(result.stdout, line)
      assert.match(result.stdout, /bye — session [0-9a-f-]{36}/)
    }))
})

describe("harness run (chat-completions server)", { timeout: 180_000 }, () => {
  /** A fake server answering each request with the next of `statuses` (the last one repeats). */
  const withServer = <A>(
    statuses: number | ReadonlyArray<number>,
    f: (url: string, bodies: Array<unknown>) => Promise<A>,
    reply: ReadonlyArray<string> = ["Hello from ", "the fake server."]
  ) =>
    Effect.acquireUseRelease(
      Effect.promise(() =>
        new Promise<{ readonly url: string; readonly close: () => void; readonly bodies: Array<unknown> }>(
          (resolve) => {
            const bodies: Array<unknown> = []
            const server = createServer((request, response) => {
              let raw = ""
              request.on("data", (part) => (raw += part))
              request.on("end", () => {
                bodies.push(JSON.parse(raw))
                const all = typeof statuses === "number" ? [statuses] : statuses
                const status = all[Math.min(bodies.length, all.length) - 1]!
                if (status !== 200) {
                  response.writeHead(status, { "content-type": "application/json" })
                  response.end(JSON.stringify({ error: { message: "bad key", type: "authentication_error" } }))
                  return
                }
                response.writeHead(200, { "content-type": "text/event-stream" })
                response.write(chatChunk("fake-model", { role: "assistant", content: "" }))
                for (const content of reply) response.write(chatChunk("fake-model", { content }))
                response.write(chatChunk("fake-model", {}, "stop"))
                response.end("data: [DONE]\n\n")
              })
            })
            server.listen(0, "127.0.0.1", () =>
              resolve({
                url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, // listening on TCP: an AddressInfo
                close: () => server.close(),
                bodies
              }))
          }
        )
      ),
      (server) => live((dir) => f(server.url, server.bodies).then((a) => (void dir, a))),
      (server) => Effect.sync(server.close)
    )

  it.live("--base-url streams the provider's answer; the request carries the model and the prompt", () =>
    withServer(200, async (url, bodies) => {
      const [dir, cleanup] = workspace()
      try {
        const result = await harness(["run", "--base-url", url, "--model", "fake-model", "say hello"], { cwd: dir })
        assert.strictEqual(result.code, 0, result.stderr)
        assert.include(result.stdout, "Hello from the fake server.")
        assert.strictEqual(bodies.length, 1)
        const body = JSON.stringify(bodies[0])
        assert.include(body, "\"model\":\"fake-model\"")
        assert.include(body, "say hello")
      } finally {
        cleanup()
      }
    }))

  it.live("a retried request: --json stdout is NDJSON only, its first line names the session; plain run keeps the warning off stdout (#37.1)", () =>
    withServer([500, 200, 500, 200], async (url) => {
      const [dir, cleanup] = workspace()
      try {
        const env = { LLM_RETRY_BASE_DELAY: "0 millis", LLM_MAX_RETRIES: "2" }
        const json = await harness(["run", "--json", "--base-url", url, "say hello"], { cwd: dir, env })
        assert.strictEqual(json.code, 0, json.stderr)
        const lines = json.stdout.trimEnd().split("\n")
        const events = lines.map((line) => decodeRunEvent(line))
        const first = events[0]
        assert.strictEqual(first?.type, "run/session", lines[0])
        const session = first?.type === "run/session" ? first.session : ""
        assert.match(session, /^[0-9a-f-]{36}$/)
        const warnings = events.filter((e) => e.type === "run/log")
        assert.strictEqual(warnings.length, 1, json.stdout)
        assert.include(JSON.stringify(warnings[0]), "retrying")
        assert.include(json.stdout, "Hello from ")

        const plain = await harness(["run", "--base-url", url, "say hello"], { cwd: dir, env })
        assert.strictEqual(plain.code, 0, plain.stderr)
        assert.strictEqual(plain.stdout, "Hello from the fake server.\n")
        assert.include(plain.stderr, "retrying")
        // The session the --json run named is in the store.
        const show = await harness(["sessions", "show", session], { cwd: dir })
        assert.strictEqual(show.code, 0, show.stderr)
      } finally {
        cleanup()
      }
    }))

  it.live("a provider failure is a non-zero exit with the reason in plain words", () =>
    withServer(401, async (url) => {
      const [dir, cleanup] = workspace()
      try {
        const result = await harness(["run", "--base-url", url, "hello"], {
          cwd: dir,
          env: { LLM_MAX_RETRIES: "0" }
        })
        assert.strictEqual(result.code, 1)
        assert.include(result.stderr, "harness: the turn failed")
        assert.include(result.stderr, "check the API key (harness config shows where it comes from)")
      } finally {
        cleanup()
      }
    }))
})

describe("bad input and configuration", { timeout: 180_000 }, () => {
  it.live("a bad --store URL, an unknown option and a malformed flag exit with code 2 and say why", () =>
    live(async (dir) => {
      const store = await harness(["run", "--store", "mysql://x", "hi"], { cwd: dir })
      assert.strictEqual(store.code, 2)
      assert.include(store.stderr, "--store \"mysql://x\" is not a store: use sqlite:<file>, jsonl:<directory>")
      const unknown = await harness(["run", "--frobnicate", "hi"], { cwd: dir })
      assert.strictEqual(unknown.code, 2)
      assert.include(unknown.stderr, "unknown option --frobnicate")
      const malformed = await harness(["sessions", "fork", "--at", "soon", "abc"], { cwd: dir })
      assert.strictEqual(malformed.code, 2)
      assert.include(malformed.stdout + malformed.stderr, "'soon' is not a integer")
      assert.notInclude(malformed.stdout + malformed.stderr, "\x1b[") // plain when not a terminal
      const help = await harness(["sessions", "fork", "--help"], { cwd: dir })
      assert.strictEqual(help.code, 0, help.stderr)
      assert.include(help.stdout, "harness sessions fork 3f2a --at 20")
      assert.notInclude(help.stdout, "\x1b[")
      const missing = await harness(["sessions", "show", "nope"], { cwd: dir })
      assert.strictEqual(missing.code, 1)
      assert.include(missing.stderr, "no session \"nope\" in this store")
    }))

  it.live("the TypeScript sources run too (HARNESS_FROM_SOURCE=1, the path used while the bundle is stale)", () =>
    live(async (dir) => {
      const result = await harness(["run", "--store", "memory", "hello"], {
        cwd: dir,
        env: { HARNESS_FROM_SOURCE: "1" }
      })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.include(result.stdout, "Hello! I am Harness's offline model")
    }))

  it.live("config shows each value's origin and never prints the API key", () =>
    live(async (dir) => {
      const result = await harness(["config", "--store", "memory"], {
        cwd: dir,
        env: { DEEPSEEK_API_KEY: "sk-very-secret", HARNESS_MODEL: "deepseek-v4-pro" }
      })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.notInclude(result.stdout, "sk-very-secret")
      assert.match(result.stdout, /api-key\s+<redacted>\s+\(env DEEPSEEK_API_KEY\)/)
      assert.match(result.stdout, /provider\s+chat-completions\s+\(an API key is set \(env DEEPSEEK_API_KEY\)\)/)
      assert.match(result.stdout, /model\s+deepseek-v4-pro\s+\(env HARNESS_MODEL\)/)
      assert.match(result.stdout, /store\s+memory\s+\(flag --store\)/)
    }))

  it.live("config lists every provider setting with its value and source, secrets redacted", () =>
    live(async (dir) => {
      const result = await harness(["config", "--store", "memory"], {
        cwd: dir,
        env: {
          LLM_TEMPERATURE: "0.3",
          LLM_REQUEST_TIMEOUT: "30 seconds",
          LLM_HEADERS: "{\"X-Secret\":\"hush-hush\"}"
        }
      })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.notInclude(result.stdout, "hush-hush")
      assert.match(result.stdout, /LLM_TEMPERATURE\s+0\.3\s+\(env LLM_TEMPERATURE\)/)
      assert.match(result.stdout, /LLM_REQUEST_TIMEOUT\s+30 seconds\s+\(env LLM_REQUEST_TIMEOUT\)/)
      assert.match(result.stdout, /LLM_HEADERS\s+<redacted>\s+\(env LLM_HEADERS\)/)
      assert.match(result.stdout, /LLM_MAX_RETRIES\s+2\s+\(default\)/)
      assert.match(result.stdout, /LLM_IDLE_TIMEOUT\s+120 seconds\s+\(default\)/)
      const shown = new Set(result.stdout.split("\n").map((line) => line.split(/\s+/)[0]))
      const owned = new Set(["model", "baseUrl", "apiKey"])
      for (const setting of ChatCompletions.configSettings) {
        if (!owned.has(setting.option)) assert.isTrue(shown.has(setting.key), `${setting.key} is listed`)
      }
      // The three the CLI's own settings stand for are listed once, under the CLI's names.
      assert.notMatch(result.stdout, /^LLM_MODEL\s/m)
    }))

  it.live("config --describe says under each setting what it means", () =>
    live(async (dir) => {
      const result = await harness(["config", "--describe", "--store", "memory"], { cwd: dir })
      assert.strictEqual(result.code, 0, result.stderr)
      const shown = result.stdout.trimEnd().split("\n")
      const under = (name: string) => shown[shown.findIndex((line) => line.startsWith(`${name} `)) + 1]?.trim()
      assert.strictEqual(under("store"), Settings.descriptions.store)
      const retries = ChatCompletions.configSettings.find((setting) => setting.key === "LLM_MAX_RETRIES")
      assert.strictEqual(under("LLM_MAX_RETRIES"), retries?.description)
      // Every setting line is followed by its description: the listing has twice as many lines.
      const plain = await harness(["config", "--store", "memory"], { cwd: dir })
      assert.strictEqual(shown.length, 2 * plain.stdout.trimEnd().split("\n").length)
    }))
})
