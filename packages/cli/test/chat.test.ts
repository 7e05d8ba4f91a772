/**
 * `harness chat` in a real terminal: the executable runs in a pseudo-terminal, the test types and presses keys, and
 * reads the screen a person would see (`./terminal.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import type { Scope } from "effect"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { scopedDir } from "./fixtures.js"
import { scriptedProvider } from "./scriptedProvider.js"
import { bin, harness, serve } from "./support.js"
import * as Terminal from "./terminal.js"

const screen = (term: Terminal.Terminal): string => term.screen()

/** Waits until the screen contains `text` (polling it; fails with the screen after `seconds`). */
const waitFor = (
  term: Terminal.Terminal,
  text: string | { readonly test: (screen: string) => boolean },
  seconds = 90
) => term.waitFor(text, seconds)

const type = (term: Terminal.Terminal, text: string) => term.type(text)
const press = (term: Terminal.Terminal, ...keys: ReadonlyArray<Terminal.Key>) => term.press(...keys)
/** Types `text` and presses Enter. */
const send = (term: Terminal.Terminal, text: string) => term.send(text)
/**
 * The chat's status line — the last one on the screen; an earlier one can stay in the scrollback, such as the opening
 * `idle · 0 tokens` — says idle.
 */
const idleStatus = {
  test: (screen: string) =>
    /^idle · \d+ tokens/.test(screen.split("\n").findLast((line) => / · \d+ tokens/.test(line)) ?? ""),
  toString: () => "an idle status line"
}
const idle = (term: Terminal.Terminal) => waitFor(term, idleStatus)

/** Runs `harness chat` in a terminal in a fresh workspace (or `workspace`); both go with the scope. */
const startChat = (
  env: string,
  args: string,
  workspace?: string,
  size: { readonly columns: number; readonly rows: number } = { columns: 160, rows: 50 }
) =>
  Effect.gen(function*() {
    const dir = workspace ?? (yield* scopedDir)
    const store = `sqlite:${join(dir, "chat.db")}`
    const term = yield* Terminal.open({
      command: `env NO_COLOR=1 ${env} ${process.execPath} ${bin} chat --store ${store} ${args}`,
      cwd: dir,
      ...size
    })
    return { dir, store, term }
  })

/** Waits for `/drop 1`'s answer about `item` and checks it says `why`. */
const dropped = (session: Terminal.Terminal, item: string, why: string) =>
  Effect.map(
    waitFor(session, `(${item})`),
    (now) => assert.include(now, `item 1 is no longer pending: ${why} (${item})`)
  )

/**
 * The screen as one line: the rows of a wrapped answer line, joined by the spaces they were cut at, read as the
 * line itself — so a line of the answer is whole on the screen exactly when the model's line is a substring.
 */
const flat = (screen: string): string => screen.split("\n").map((row) => row.trimEnd()).join(" ")

/**
 * A chat on the scripted provider (`env` added to its environment) with a story streaming: "tell me a story" sent,
 * its request taken and its first words on the screen. The story's request is the test's to go on with.
 */
const storyStreaming = (env = "") =>
  Effect.gen(function*() {
    const provider = yield* scriptedProvider
    const chat = yield* startChat(`'LLM_IDLE_TIMEOUT=10 minutes' ${env}`, provider.args)
    yield* waitFor(chat.term, "idle · 0 tokens · /help")
    yield* send(chat.term, "tell me a story")
    const story = yield* Queue.take(provider.requests)
    yield* story.text("Once upon a time")
    yield* waitFor(chat.term, "Once upon a time")
    return { ...chat, provider, story }
  })

/** Takes the provider's next request, waits for its turn to start on `prompt` and answers it with `text`. */
const answer = (
  provider: Effect.Effect.Success<typeof scriptedProvider>,
  term: Terminal.Terminal,
  prompt: string,
  text: string
) =>
  Effect.gen(function*() {
    const request = yield* Queue.take(provider.requests)
    yield* waitFor(term, `▸ ${prompt}`)
    yield* request.text(text)
    yield* request.end
    return request
  })

/** Leaves the chat with /exit; `harness sessions show` of its session must succeed: its output. */
const exitAndShow = (term: Terminal.Terminal, store: string, dir: string) =>
  Effect.gen(function*() {
    yield* send(term, "/exit")
    yield* waitFor(term, "bye — session")
    const id = /bye — session ([0-9a-f-]{36})/.exec(screen(term))?.[1]
    assert.isDefined(id)
    const show = yield* Effect.promise(() => harness(["sessions", "show", "--store", store, id!], { cwd: dir }))
    assert.strictEqual(show.code, 0, show.stderr)
    return show.stdout
  })

/** The groups of `pattern` in each line of `text` it matches (trimmed), joined by ": ". */
const matching = (text: string, pattern: RegExp): ReadonlyArray<string> =>
  text.split("\n").flatMap((line) => {
    const match = pattern.exec(line.trim())
    return match === null ? [] : [match.slice(1).join(": ")]
  })

/**
 * Where the chat's agent lives: in the chat's process over the SQLite store `startChat` names, or on `harness serve --ask` (a real child
 * process on loopback, its approvals answered by the chat) with `--remote`; `show` names the session's place again
 * for `sessions show`.
 */
interface Mode {
  /** Whether the chat holds a claimed item for the Ctrl-C window (its own hook: in process only). */
  readonly held: boolean
  readonly env: string
  readonly args: string
  readonly show: ReadonlyArray<string>
  readonly showEnv: Record<string, string>
}

const localMode = (dir: string) =>
  Effect.succeed<Mode>({
    held: true,
    env: "",
    args: "", // startChat's own --store
    show: ["--store", `sqlite:${join(dir, "chat.db")}`],
    showEnv: {}
  })

const remoteMode = (dir: string) =>
  Effect.gen(function*() {
    const token = "chat-secret"
    const server = yield* Effect.acquireRelease(
      Effect.promise(() =>
        serve(dir, { HARNESS_SERVER_TOKENS: `chat:send:${token}`, HARNESS_OFFLINE_PACE_MS: "200" }, [
          "--store",
          `sqlite:${join(dir, "serve.db")}`,
          "--ask"
        ])
      ),
      (server) => Effect.promise(() => server.stop())
    )
    return {
      held: false,
      env: `HARNESS_REMOTE_TOKEN=${token}`,
      args: `--remote ${server.url}`,
      show: ["--remote", server.url],
      showEnv: { HARNESS_REMOTE_TOKEN: token }
    } satisfies Mode
  })

/**
 * The core chat scenario, run the same way in a local chat and in a `--remote` one (ADR 0063): every line the
 * person sees is asserted in both.
 */
const coreScenario = (mode: (dir: string) => Effect.Effect<Mode, never, Scope.Scope>) =>
  Effect.gen(function*() {
    const dir = yield* scopedDir
    writeFileSync(join(dir, "README.md"), "# chat test\n")
    const where = yield* mode(dir)
    const { term: name } = yield* startChat(`HARNESS_OFFLINE_PACE_MS=200 ${where.env}`, where.args, dir)

    yield* waitFor(name, "idle · 0 tokens · /help")
    yield* send(name, "tell me a long story")
    yield* waitFor(name, "Once upon a time")
    // The status line: a spinner, the elapsed time, the tokens used, what cancels.
    yield* waitFor(name, /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] working \d+\.\ds · \d+ tokens · Esc\/Ctrl-C cancels/)

    // Enter while the turn runs steers it; `+` and `/queue` queue follow-ups; the badge is the agent's inbox.
    yield* send(name, "keep it short")
    yield* waitFor(name, "› keep it short (steering the running turn)")
    yield* send(name, "+what is a dog")
    yield* send(name, "/queue write notes.txt: hello from chat")
    yield* send(name, "+what is a cat")
    yield* waitFor(name, "3 queued · 1 steering")
    yield* send(name, "/inbox")
    const inbox = yield* waitFor(name, "4. queued   what is a cat")
    assert.include(inbox, "1. steering keep it short")
    assert.include(inbox, "2. queued   what is a dog")
    assert.include(inbox, "3. queued   write notes.txt: hello from chat")

    // /drop withdraws one item (agent.withdraw); it never runs.
    yield* send(name, "/drop 4")
    yield* waitFor(name, "withdrew 4. queued what is a cat (it will not run)")
    yield* waitFor(name, "2 queued · 1 steering")

    // Up on an empty prompt edits the last queued item in place (agent.edit): it stays in the inbox meanwhile,
    // and Enter saves the new text where the item was.
    yield* press(name, "Up")
    yield* waitFor(name, "editing “write notes.txt: hello from chat” (Enter saves it in place")
    yield* press(name, "BSpace", "BSpace", "BSpace", "BSpace")
    yield* type(name, "term")
    const whileEditing = yield* waitFor(name, "› write notes.txt: hello from term")
    assert.include(whileEditing, "2 queued · 1 steering")
    yield* press(name, "Enter")
    yield* waitFor(name, "✎ write notes.txt: hello from term (edited in place: it keeps its place in the inbox)")
    yield* send(name, "/inbox")
    yield* waitFor(name, "3. queued   write notes.txt: hello from term")

    // Ctrl-C cancels the running turn and keeps the inbox; the kept steering joins the next turn (before its
    // prompt, R43/R81), and the model acknowledges it there.
    yield* press(name, "C-c")
    yield* waitFor(name, "cancelling the turn (keeping 2 queued · 1 steering")
    yield* waitFor(name, "turn 1 cancelled")
    yield* waitFor(name, "↪ steering joined turn 2: keep it short")
    yield* waitFor(name, "Noted: “keep it short”. You said “what is a dog”.")

    // Item 2 of the last listing was claimed by turn 2: dropping it now says so (NotPending) and changes nothing.
    yield* send(name, "/drop 2")
    yield* waitFor(name, "item 2 is no longer pending: the agent already took it (what is a dog)")

    // The queued write asks for approval inline; `y` allows it and the file is on disk.
    yield* waitFor(name, "allow write_file(")
    yield* type(name, "y")
    yield* waitFor(name, "Wrote 1 line")
    assert.strictEqual(readFileSync(join(dir, "notes.txt"), "utf8"), "hello from term\n")
    // Each tool call is one numbered line with its outcome; /expand shows the whole call and output.
    yield* waitFor(name, "↳ [1] ok, 1 line: Wrote 1 line")
    yield* send(name, "/expand 1")
    yield* waitFor(name, "[1] write_file {\"path\":\"notes.txt\",\"content\":\"hello from term\\n\"}")

    // A goal: set while idle, it runs two rounds on the offline model and completes.
    yield* idle(name)
    yield* send(name, "/goal set list the files")
    yield* waitFor(name, "Created goal")
    yield* waitFor(name, "◎ goal round 2: list the files")
    yield* waitFor(name, "◎ goal complete → complete")
    yield* idle(name)
    yield* send(name, "/goal show")
    yield* waitFor(name, "Phase: complete")

    // `a` allows writes to files in that folder (the workspace root here): the second write runs without asking.
    yield* send(name, "write a.txt: one")
    yield* waitFor(name, "allow write_file({\"path\":\"a.txt\"")
    yield* type(name, "a")
    // The turn's last answer first: after an approval the status line may say idle while the turn still runs.
    yield* waitFor(name, /write_file returned 1 line:\s+Wrote 1 line \(4 B\) to `a\.txt`/)
    yield* idle(name)
    yield* send(name, "write b.txt: two")
    yield* waitFor(name, "↳ [5] ok, 1 line: Wrote 1 line")
    assert.strictEqual(readFileSync(join(dir, "b.txt"), "utf8"), "two\n")

    // Ctrl-C twice within a second while a turn runs discards the inbox; twice on an idle prompt exits.
    yield* idle(name)
    yield* send(name, "tell me a long story")
    yield* waitFor(name, "Once upon a time")
    yield* send(name, "+what is a bird")
    yield* waitFor(name, "1 queued")
    yield* press(name, "C-c", "C-c")
    // Over --remote the chat's hold on a claimed item (a local hook) is not there: the server's agent may claim the
    // queued item between the two cancels, and the second one then cancels its turn instead of discarding it.
    yield* waitFor(name, where.held ? "cancelled; discarded 1 pending item(s)" : /cancelled; discarded [01] pending/)
    yield* idle(name)

    const before = screen(name)
    assert.notInclude(before, "what is a cat.") // the withdrawn item never ran
    assert.notInclude(before, "You said “what is a bird”") // nor the discarded one
    yield* press(name, "C-c", "C-c")
    const last = yield* waitFor(name, "bye — session")
    const id = /bye — session ([0-9a-f-]{36})/.exec(last)?.[1]
    assert.isDefined(id)

    const show = yield* Effect.promise(() =>
      harness(["sessions", "show", ...where.show, id!], { cwd: dir, env: where.showEnv })
    )
    assert.strictEqual(show.code, 0, show.stderr)
    assert.include(show.stdout, "turn 1 ends: aborted")
    assert.include(show.stdout, "steering (user): keep it short")
    assert.include(show.stdout, "tool result write_file: ok")
    assert.include(show.stdout, "goal round 2: list the files")
    assert.include(show.stdout, "inbox: edited")
    // The withdrawn item is in the log only as inbox records (accepted, then withdrawn), never as a message.
    const cat = show.stdout.split("\n").filter((line) => line.includes("what is a cat"))
    assert.isTrue(cat.some((line) => line.includes("inbox: withdrawn")), cat.join("\n"))
    assert.isTrue(cat.every((line) => /inbox: (accepted|withdrawn)/.test(line)), cat.join("\n"))
    assert.include(show.stdout, "the log checks clean")
  }).pipe(Effect.scoped)

describe("harness chat in a terminal", { timeout: 300_000 }, () => {
  it.live("steer while it works, queue, list, drop and Up-edit the inbox, Ctrl-C keeps the queue, approve a write (once, always), a goal, Ctrl-C twice discards then exits (R28, R81)", () =>
    coreScenario(localMode))

  it.live("--remote: the same chat against harness serve --ask — steer, queue, drop, edit, cancel keeping the queue, approvals, a goal, discard (R197, R240)", () =>
    coreScenario(remoteMode))

  it.live("Ctrl-D keeps an edited item; `a` covers this exact command or this folder; two Ctrl-C never let a queued item reach the model; the bye line's command finds the session (#37.2, #37.5, #37.9, #46)", () =>
    Effect.gen(function*() {
      // A double-press window of a minute: the second Ctrl-C below lands inside it however loaded the machine is.
      const { dir, store, term: name } = yield* startChat(
        "HARNESS_OFFLINE_PACE_MS=200 HARNESS_DOUBLE_PRESS_MS=60000",
        ""
      )
      yield* waitFor(name, "idle · 0 tokens · /help")

      // Ctrl-D while a queued item is being edited with Up (its text erased) does not leave: leaving would lose
      // the edit (#46).
      yield* send(name, "tell me a long story")
      yield* waitFor(name, "Once upon a time")
      yield* send(name, "+abc")
      yield* waitFor(name, "1 queued")
      yield* press(name, "Up")
      yield* waitFor(name, "editing “abc”")
      yield* press(name, "BSpace", "BSpace", "BSpace")
      yield* press(name, "C-d")
      yield* send(name, "abd")
      const afterCtrlD = yield* waitFor(name, /✎ abd \(edited in place|bye — session/)
      assert.include(afterCtrlD, "✎ abd (edited in place")
      assert.notInclude(afterCtrlD, "bye — session")
      // Esc cancels keeping the inbox (and records no Ctrl-C); the queued item runs.
      yield* press(name, "Escape")
      yield* waitFor(name, "cancelling the turn (keeping 1 queued)")
      yield* waitFor(name, "You said “abd”")
      yield* idle(name)

      // `a` on a shell command allows that exact command again, not another one (#37.9).
      yield* send(name, "run `echo one`")
      yield* waitFor(name, "allow shell({\"command\":\"echo one\"})? [y]es / [n]o / [a]lways this exact command:")
      yield* type(name, "a")
      yield* waitFor(name, "↳ [1] ok")
      yield* idle(name)
      yield* send(name, "run `echo one`")
      yield* waitFor(name, "↳ [2] ok")
      yield* idle(name)
      yield* send(name, "run `echo two`")
      yield* waitFor(name, "allow shell({\"command\":\"echo two\"})?")
      yield* type(name, "n")
      yield* waitFor(name, "denied shell")
      yield* idle(name)

      // A write shows what it would write before asking; `a` allows writes to files in that folder only.
      yield* send(name, "write notes/a.txt: first note")
      const asked = yield* waitFor(name, "[a]lways writes to files in notes/:")
      assert.include(asked, "notes/a.txt (whole file):")
      assert.include(asked, "+ first note")
      yield* type(name, "a")
      yield* idle(name)
      yield* send(name, "write notes/b.txt: second note")
      yield* waitFor(name, "↳ [5] ok, 1 line: Wrote 1 line")
      assert.strictEqual(readFileSync(join(dir, "notes", "b.txt"), "utf8"), "second note\n")
      yield* idle(name)
      yield* send(name, "write top.txt: elsewhere")
      yield* waitFor(name, "allow write_file({\"path\":\"top.txt\"")
      yield* type(name, "y")
      yield* waitFor(name, "↳ [6] ok, 1 line: Wrote 1 line")
      yield* idle(name)

      // /expand of a long output says how to see all of it, with the --store in force (#37.5).
      writeFileSync(join(dir, "big.txt"), Array.from({ length: 300 }, (_, i) => `line ${i + 1}`).join("\n"))
      yield* send(name, "read big.txt")
      yield* waitFor(name, "↳ [7] ok")
      yield* idle(name)
      yield* send(name, "/expand 7")
      yield* waitFor(name, `more lines (harness sessions export --format md --store ${store} `)

      // Ctrl-C cancels keeping the queue, and the queued item waits for the window; a second Ctrl-C inside it
      // discards the item before it reaches the model (#37.2).
      yield* send(name, "tell me a long story again")
      yield* waitFor(name, /› tell me a long story again[\s\S]*Once upon a time/)
      yield* send(name, "+what is a bird")
      yield* waitFor(name, "1 queued")
      yield* press(name, "C-c")
      yield* waitFor(name, "cancelling the turn (keeping 1 queued; Ctrl-C again within 60 seconds discards them)")
      yield* waitFor(name, /\+ what is a bird \(queued\)[\s\S]*turn \d+ cancelled/)
      yield* press(name, "C-c")
      yield* waitFor(name, /cancelled; discarded \d+ pending item/)
      yield* idle(name)
      yield* press(name, "C-c", "C-c")
      const bye = yield* waitFor(name, "bye — session")

      // The bye line's command, as printed (with the --store in force), finds the session (#37.5).
      const command = /bye — session [0-9a-f-]{36}: harness (sessions show .*)$/m.exec(bye)?.[1]
      assert.isDefined(command, bye)
      assert.include(command!, `--store ${store}`)
      const show = yield* Effect.promise(() => harness(command!.split(" "), { cwd: tmpdir() }))
      assert.strictEqual(show.code, 0, show.stderr)
      assert.include(show.stdout, "tool call shell({\"command\":\"echo two\"})")
      // The discarded item never reached the model: it is in the log only as inbox records, never as a message.
      const bird = show.stdout.split("\n").filter((line) => line.includes("what is a bird"))
      assert.isTrue(bird.length > 0, show.stdout)
      assert.isTrue(bird.every((line) => /inbox: (accepted|claimed|discarded)/.test(line)), bird.join("\n"))
      assert.include(show.stdout, "the log checks clean")
    }).pipe(Effect.scoped))

  it.live("after kill -9 mid-turn, chat --continue shows the conversation, the interrupted turn and the restored items, which wait until Enter (#37.3)", () =>
    Effect.gen(function*() {
      const { dir, store, term: first } = yield* startChat("HARNESS_OFFLINE_PACE_MS=200", "")
      const opened = yield* waitFor(first, "idle · 0 tokens · /help")
      const id = /new session ([0-9a-f-]{36})/.exec(opened)?.[1]
      assert.isDefined(id, opened)
      yield* send(first, "tell me a long story")
      yield* waitFor(first, "Once upon a time")
      yield* send(first, "+what is a dog")
      yield* send(first, "+what is a cat")
      yield* waitFor(first, "+ what is a cat (queued)")
      // kill -9 the chat process (the terminal runs it directly).
      process.kill(first.pid, "SIGKILL")

      const { term: second } = yield* startChat("HARNESS_OFFLINE_PACE_MS=200", "--continue", dir)
      const resumed = yield* waitFor(second, "Enter runs the restored items")
      assert.include(resumed, `continuing session ${id}`)
      assert.include(resumed, "› tell me a long story")
      assert.include(resumed, "turn 1 was interrupted")
      assert.include(resumed, "restored 2 pending item(s); they wait for you:")
      assert.include(resumed, "1. queued   what is a dog")
      assert.include(resumed, "2. queued   what is a cat")
      assert.include(resumed, "waiting for you")
      assert.notInclude(resumed, "You said “what is a dog”")

      // Drop one, then Enter runs the other.
      yield* send(second, "/drop 2")
      yield* waitFor(second, "withdrew 2. queued what is a cat (it will not run)")
      yield* press(second, "Enter")
      yield* waitFor(second, "running the restored items")
      yield* waitFor(second, "You said “what is a dog”")
      yield* idle(second)
      yield* press(second, "C-c", "C-c")
      yield* waitFor(second, "bye — session")

      const show = yield* Effect.promise(() => harness(["sessions", "show", "--store", store, id!], { cwd: dir }))
      assert.strictEqual(show.code, 0, show.stderr)
      assert.include(show.stdout, "turn 1 ends: interrupted")
      assert.include(show.stdout, "user: what is a dog")
      const cat = show.stdout.split("\n").filter((line) => line.includes("what is a cat"))
      assert.isTrue(cat.length > 0 && cat.every((line) => /inbox: /.test(line)), cat.join("\n"))
    }).pipe(Effect.scoped))

  it.live("R173: a chat killed while it asked to approve a shell command; chat --continue shows the approval, `y` runs the command once and the model hears its result (R166, R169)", () =>
    Effect.gen(function*() {
      const { dir, store, term: first } = yield* startChat("HARNESS_OFFLINE_PACE_MS=1", "")
      const opened = yield* waitFor(first, "idle · 0 tokens · /help")
      const id = /new session ([0-9a-f-]{36})/.exec(opened)?.[1]
      assert.isDefined(id, opened)
      yield* send(first, "run `echo ran >> ran.txt`")
      yield* waitFor(first, "allow shell({\"command\":\"echo ran >> ran.txt\"})? [y]es / [n]o / [a]lways")
      // kill -9 while the question shows: the approval is durable, the command has not run.
      process.kill(first.pid, "SIGKILL")
      assert.isFalse(existsSync(join(dir, "ran.txt")))

      const { term: second } = yield* startChat("HARNESS_OFFLINE_PACE_MS=1", "--continue", dir)
      const resumed = yield* waitFor(second, "[a]lways this exact command:")
      assert.include(resumed, `continuing session ${id}`)
      assert.include(resumed, "1 tool call(s) wait for your approval:")
      assert.include(
        resumed,
        "shell({\"command\":\"echo ran >> ran.txt\"}) waited for your approval when the session stopped"
      )
      assert.include(resumed, "allow shell({\"command\":\"echo ran >> ran.txt\"})? [y]es / [n]o")
      assert.isFalse(existsSync(join(dir, "ran.txt")))
      yield* type(second, "y")
      yield* waitFor(second, "allowed shell")
      // The result reaches the model as a message, and it answers in a new turn.
      yield* waitFor(second, "+ context from harness/approval: The tool call shell (")
      yield* idle(second)
      yield* press(second, "C-c", "C-c")
      yield* waitFor(second, "bye — session")
      assert.strictEqual(readFileSync(join(dir, "ran.txt"), "utf8"), "ran\n")

      // The log checks clean; the cut call's result says it has not run, and its one run after the approval
      // reached the model once.
      const show = yield* Effect.promise(() => harness(["sessions", "show", "--store", store, id!], { cwd: dir }))
      assert.strictEqual(show.code, 0, show.stderr)
      assert.include(show.stdout, "the log checks clean")
      const exported = yield* Effect.promise(() => harness(["sessions", "export", "--store", store, id!], { cwd: dir }))
      assert.strictEqual(exported.code, 0, exported.stderr)
      const events: ReadonlyArray<{ readonly type: string; readonly data: Record<string, unknown> }> = exported.stdout
        .split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))
      const textOf = (data: Record<string, unknown>) => JSON.stringify(data.content)
      const results = events.filter((event) => event.type === "tool/result")
      assert.strictEqual(results.length, 1, exported.stdout)
      assert.include(textOf(results[0]!.data), "waited for approval, so it has not run")
      const heard = events.filter((event) =>
        event.type === "user/message" && JSON.stringify(event.data.source).includes("harness/approval")
      )
      assert.strictEqual(heard.length, 1, exported.stdout)
      assert.include(textOf(heard[0]!.data), "was allowed and has now run")

      // Nothing is pending any more: a third chat asks nothing.
      const { term: third } = yield* startChat("HARNESS_OFFLINE_PACE_MS=1", "--continue", dir)
      // Keys are read after the restored approvals are shown: the answer to /inbox comes after them.
      yield* send(third, "/inbox")
      const again = yield* waitFor(third, "the inbox is empty")
      assert.notInclude(again, "wait for your approval")
      assert.notInclude(again, "[y]es / [n]o")
    }).pipe(Effect.scoped))

  it.live("a notice never splits a line of the streamed answer: above the live region, or after the line when it outgrew it; a queued turn starts with a line naming its prompt", () =>
    Effect.gen(function*() {
      const provider = yield* scriptedProvider
      // 16 rows: the live region shows 6 rows of the answer's current line (98 columns each).
      const { term: name } = yield* startChat("'LLM_IDLE_TIMEOUT=10 minutes'", provider.args, undefined, {
        columns: 100,
        rows: 16
      })
      yield* waitFor(name, "idle · 0 tokens · /help")
      yield* send(name, "tell me a story")
      const story = yield* Queue.take(provider.requests)

      // A short line streams: notices go above the live region, between whole lines of the answer.
      const first = "The first line of the answer ends here."
      const second = "The second line streams slowly and is still open while notices arrive, then it ends."
      yield* story.text(`${first}\n${second.slice(0, 40)}`)
      yield* waitFor(name, second.slice(0, 40))
      yield* send(name, "+what is a dog")
      yield* send(name, "/inbox")
      yield* send(name, "/goal show")
      yield* waitFor(name, "No goal.")
      yield* story.text(`${second.slice(40)}\n`)

      // A line longer than the live region: its first rows are printed, and notices wait for the line to end.
      const third = Array.from({ length: 20 }, (_, i) => `Sentence ${i + 1} of the long third line goes on.`).join(" ")
      yield* story.text(third.slice(0, 700))
      yield* waitFor(name, "Sentence 15 of the long")
      yield* send(name, "+what is a cat")
      yield* send(name, "/inbox")
      const holding = yield* waitFor(name, /3 lines held until this line ends|2\. queued +what is a cat/)
      assert.notInclude(holding, "2. queued   what is a cat")
      yield* story.text(`${third.slice(700)}\nThe last line.\n`)
      yield* story.end

      // The queued turn starts with a line naming its prompt, before its answer.
      const dog = yield* Queue.take(provider.requests)
      yield* dog.text("Dogs bark.\n")
      yield* dog.end
      const cat = yield* Queue.take(provider.requests)
      yield* cat.text("Cats purr.\n")
      yield* cat.end
      const done = flat(yield* waitFor(name, /Cats purr\.[\s\S]*idle · \d+ tokens · \/help/))

      // Every line of the answer is whole on the screen; the notices are around the lines, never inside one.
      for (const line of [first, second, third, "The last line."]) assert.include(done, line)
      const at = (text: string) => {
        const i = done.indexOf(text)
        assert.isAtLeast(i, 0, `${text} is not on the screen:\n${done}`)
        return i
      }
      assert.isBelow(at(first), at("+ what is a dog (queued)"))
      assert.isBelow(at("No goal."), at(second))
      assert.isBelow(at(third), at("+ what is a cat (queued)"))
      assert.isBelow(at("2. queued   what is a cat"), at("The last line."))
      assert.isBelow(at("The last line."), at("▸ what is a dog"))
      assert.isBelow(at("▸ what is a dog"), at("Dogs bark."))
      assert.isBelow(at("Dogs bark."), at("▸ what is a cat"))
      assert.isBelow(at("▸ what is a cat"), at("Cats purr."))
      // The prompt typed on an idle prompt is echoed once, not announced again when its turn starts.
      assert.notInclude(done, "▸ tell me a story")
    }).pipe(Effect.scoped))

  it.live("/drop says what became of an item: withdrawn now, already withdrawn, taken by the agent, discarded, no such item", () =>
    Effect.gen(function*() {
      // A double-press window of a minute: the second Ctrl-C below lands inside it however loaded the machine is.
      const { provider, story, term: name } = yield* storyStreaming("HARNESS_DOUBLE_PRESS_MS=60000")

      // Withdrawn now, then already withdrawn.
      yield* send(name, "+what is a cat")
      yield* send(name, "/inbox")
      yield* waitFor(name, "1. queued   what is a cat")
      yield* send(name, "/drop 1")
      yield* waitFor(name, "withdrew 1. queued what is a cat (it will not run)")
      yield* send(name, "/drop 1")
      yield* dropped(name, "what is a cat", "it was already withdrawn")

      // Taken by the agent: the story ends, and the queued item is the next turn's prompt.
      yield* send(name, "+what is a fish")
      yield* send(name, "/inbox")
      yield* waitFor(name, "1. queued   what is a fish")
      yield* story.text(", the end.\n")
      yield* story.end
      const fish = yield* Queue.take(provider.requests)
      yield* waitFor(name, "▸ what is a fish")
      yield* send(name, "/drop 1")
      yield* dropped(name, "what is a fish", "the agent already took it")

      // Discarded: Ctrl-C keeps the inbox (the next item waits for the window), a second Ctrl-C discards it.
      yield* fish.text("Fish swim")
      yield* waitFor(name, "Fish swim")
      yield* send(name, "+what is a bird")
      yield* send(name, "/inbox")
      yield* waitFor(name, "1. queued   what is a bird")
      yield* press(name, "C-c")
      yield* waitFor(name, "cancelling the turn (keeping 1 queued")
      // The cancelled answer's open line is closed where it stopped.
      yield* waitFor(name, "Fish swim …")
      yield* press(name, "C-c")
      yield* waitFor(name, /cancelled; discarded 1 pending item/)
      yield* send(name, "/drop 1")
      yield* dropped(name, "what is a bird", "it was discarded with the inbox")
      yield* send(name, "/drop 3")
      yield* waitFor(name, "no item 3: /drop takes a number from 1 to 1 (/inbox lists them)")
    }).pipe(Effect.scoped))
})

describe("harness chat edits queued items in place", { timeout: 300_000 }, () => {
  it.live("Up edits a queued item where it is (R136): it runs first still, with the new text; Esc leaves it as it was and cancels nothing; an item the agent took meanwhile is queued anew with the edited text", () =>
    Effect.gen(function*() {
      const { dir, provider, store, story, term: name } = yield* storyStreaming()
      yield* send(name, "+what is a dog")
      yield* send(name, "+what is a cat")
      yield* waitFor(name, "2 queued")

      // Up edits the last queued item, Up again the one before it; Esc abandons the edit and cancels nothing.
      yield* press(name, "Up")
      yield* waitFor(name, "editing “what is a cat”")
      yield* press(name, "Up")
      yield* waitFor(name, "editing “what is a dog”")
      yield* press(name, "Escape")
      const abandoned = yield* waitFor(name, "edit abandoned: “what is a dog” stays as it was")
      assert.notInclude(abandoned, "cancelling the turn")

      // Edit the first one: it keeps its place, before the second.
      yield* press(name, "Up", "Up")
      yield* waitFor(name, /editing “what is a dog”[\s\S]*editing “what is a dog”/)
      yield* press(name, "BSpace", "BSpace", "BSpace")
      yield* send(name, "cow")
      yield* waitFor(name, "✎ what is a cow (edited in place: it keeps its place in the inbox)")
      yield* send(name, "/inbox")
      const listed = yield* waitFor(name, "2. queued   what is a cat")
      assert.include(listed, "1. queued   what is a cow")

      // The story ends: the edited item runs first, with its new text.
      yield* story.text(", the end.\n")
      yield* story.end
      const cow = yield* Queue.take(provider.requests)
      yield* waitFor(name, "▸ what is a cow")

      // Edit the next one, but the agent takes it before Enter: the edit is refused (taken), said so, and the
      // edited text is queued as a new follow-up.
      yield* press(name, "Up")
      yield* waitFor(name, /▸ what is a cow[\s\S]*editing “what is a cat”/)
      yield* cow.text("Cows moo.\n")
      yield* cow.end
      const cat = yield* Queue.take(provider.requests)
      yield* waitFor(name, "▸ what is a cat")
      yield* press(name, "BSpace", "BSpace", "BSpace")
      yield* send(name, "cub")
      yield* waitFor(
        name,
        "could not edit “what is a cat”: the agent already took it (or it left the inbox); queuing your edited text as a new follow-up"
      )
      yield* waitFor(name, "+ what is a cub (queued)")
      yield* cat.text("Cats purr.\n")
      yield* cat.end
      yield* answer(provider, name, "what is a cub", "Cubs grow.\n")
      yield* idle(name)
      // The session log: the turns ran cow, cat, cub in that order; the dog text never reached the model.
      const show = yield* exitAndShow(name, store, dir)
      const asked = matching(show, /user: (what is a \w+)$/)
      assert.deepStrictEqual(asked, ["what is a cow", "what is a cat", "what is a cub"], show)
      assert.include(show, "inbox: edited")
      assert.include(show, "the log checks clean")
    }).pipe(Effect.scoped))

  it.live("/move N M reorders the queued items, /promote N turns one into steering of the running turn; refusals are said in words", () =>
    Effect.gen(function*() {
      const { dir, provider, store, story, term: name } = yield* storyStreaming()
      for (const animal of ["dog", "cat", "fox"]) {
        yield* send(name, `+what is a ${animal}`)
      }
      yield* waitFor(name, "3 queued")

      // /move: the fox goes first among the queued items.
      yield* send(name, "/move 3")
      yield* waitFor(name, "usage: /move N M puts item N at place M (1 is first) among the queued items")
      yield* send(name, "/move 3 1")
      yield* waitFor(name, "moved 3. what is a fox (now place 1 of the queued items)")
      yield* send(name, "/inbox")
      const listed = yield* waitFor(name, "3. queued   what is a cat")
      assert.include(listed, "1. queued   what is a fox")
      assert.include(listed, "2. queued   what is a dog")

      // /promote: the cat becomes steering of the running turn; promoting it again is refused.
      yield* send(name, "/promote 3")
      yield* waitFor(name, "promoted 3. what is a cat (steering: it joins the running turn at its next step)")
      yield* waitFor(name, "2 queued · 1 steering")
      yield* send(name, "/promote 3")
      yield* waitFor(name, "could not promote item 3 (what is a cat): it is steering already")
      yield* send(name, "/promote 9")
      yield* waitFor(name, "no item 9: /promote N takes a number from 1 to 3 (/inbox lists them)")

      // The story's step ends: the steering joins turn 1; then the queued turns run, fox before dog.
      yield* story.text(", the end.\n")
      yield* story.end
      const steered = yield* Queue.take(provider.requests)
      yield* waitFor(name, "↪ steering joined turn 1: what is a cat")
      yield* steered.text("Cats purr.\n")
      yield* steered.end
      yield* answer(provider, name, "what is a fox", "Foxes hunt.\n")
      yield* answer(provider, name, "what is a dog", "Dogs bark.\n")
      yield* idle(name)

      yield* send(name, "/inbox")
      yield* waitFor(name, "the inbox is empty")
      const show = yield* exitAndShow(name, store, dir)
      const asked = matching(show, /(user|steering \(user\)): (what is a \w+)$/)
      assert.deepStrictEqual(
        asked,
        ["steering (user): what is a cat", "user: what is a fox", "user: what is a dog"],
        show
      )
      assert.include(show, "the log checks clean")
    }).pipe(Effect.scoped))

  it.live("R142 in the chat: /ifidle is refused in words while a turn runs (nothing sent); /now stops the turn and runs next, ahead of the queue", () =>
    Effect.gen(function*() {
      const { dir, provider, store, term: name } = yield* storyStreaming()
      yield* send(name, "+what is a dog")
      yield* waitFor(name, "1 queued")

      yield* send(name, "/ifidle what is a cow")
      yield* waitFor(name, "not sent: a turn is running (/ifidle sends only to an idle agent)")
      yield* send(name, "/now what is a cat")
      yield* waitFor(name, "+ what is a cat (runs next)")
      yield* answer(provider, name, "what is a cat", "Cats purr.\n")
      yield* answer(provider, name, "what is a dog", "Dogs bark.\n")
      yield* idle(name)
      // Idle: /ifidle sends.
      yield* send(name, "/ifidle what is a cow")
      yield* answer(provider, name, "what is a cow", "Cows moo.\n")
      yield* idle(name)
      const show = yield* exitAndShow(name, store, dir)
      const asked = matching(show, /user: (tell me a story|what is a \w+)$/)
      // The story was cut (aborted); the cat ran before the dog queued ahead of it; the refused cow of the first
      // /ifidle never reached the model, the second did.
      assert.deepStrictEqual(asked, ["tell me a story", "what is a cat", "what is a dog", "what is a cow"], show)
      assert.include(show, "aborted")
      assert.include(show, "the log checks clean")
    }).pipe(Effect.scoped))

  it.live("R207 in the chat: /redo stops the running turn and runs its text instead; the stopped turn is left out of the next request and stays in the log, marked", () =>
    Effect.gen(function*() {
      const { dir, provider, store, story, term: name } = yield* storyStreaming()
      assert.include(story.body, "tell me a story")
      yield* send(name, "+what is a dog")
      yield* waitFor(name, "1 queued")

      yield* send(name, "/redo what is a cat")
      yield* waitFor(name, "+ what is a cat (runs next, instead)")
      const cat = yield* answer(provider, name, "what is a cat", "Cats purr.\n")
      // The rolled-back turn's prompt and the answer it was streaming are not in the request.
      assert.include(cat.body, "what is a cat")
      assert.notInclude(cat.body, "tell me a story")
      assert.notInclude(cat.body, "Once upon a time")
      const dog = yield* answer(provider, name, "what is a dog", "Dogs bark.\n")
      assert.include(dog.body, "what is a cat")
      assert.include(dog.body, "Cats purr.")
      assert.notInclude(dog.body, "tell me a story")
      yield* idle(name)
      const show = yield* exitAndShow(name, store, dir)
      // The log keeps the rolled-back turn, marked, and checks clean.
      assert.include(show, "user: tell me a story")
      assert.include(show, "rolled back: turn 1 is left out of later requests")
      assert.include(show, "aborted")
      assert.include(show, "the log checks clean")
    }).pipe(Effect.scoped))
})
