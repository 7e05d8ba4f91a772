/**
 * The web page at `/` in a real headless Chromium (`playwright-core` driving the Chromium that `@sparticuz/chromium`
 * ships inside its npm package): send and watch the answer stream, queue two and drop one while a turn runs, steer it,
 * cancel keeping the inbox (the kept items run next), approve a write (the call runs once, its output expandable),
 * reload mid-turn and see every event once; edit and reorder queued turns; set and pause a goal. Screenshots go to `test-output/` (git-ignored; CI keeps them).
 */
import { Tool } from "@effect/ai"
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Goals } from "@harness/goal"
import { SessionStore } from "@harness/session"
import { ScriptedModel } from "@harness/testkit"
import chromium from "@sparticuz/chromium"
import { Effect, Ref, Schema } from "effect"
import { mkdirSync } from "node:fs"
import { chromium as playwright, type Page } from "playwright-core"
import { serve } from "./support.js"

const output = new URL("../test-output/", import.meta.url)

const browser = Effect.acquireRelease(
  Effect.promise(async () =>
    playwright.launch({ executablePath: await chromium.executablePath(), args: chromium.args, headless: true })
  ),
  (b) => Effect.promise(() => b.close())
)

/** Types `text` into the prompt and presses Enter. */
const send = async (page: Page, text: string) => {
  await page.fill("#prompt", text)
  await page.press("#prompt", "Enter")
}

const texts = (page: Page, selector: string) => page.locator(selector).allTextContents()

/** The seqs the page rendered, and how many durable events it saw twice. */
const rendered = (page: Page) =>
  Effect.promise(async () => ({
    seqs: (await page.textContent("#seqs"))!.split(",").filter((s) => s !== "").map(Number),
    duplicates: Number(await page.textContent("#duplicates"))
  }))

describe("the web page", () => {
  it.live(
    "send, stream, queue two and drop one, steer, cancel keeping the inbox, approve a write, reload mid-turn",
    () =>
      Effect.gen(function*() {
        const writes = yield* Ref.make(0)
        const write = AgentTool.make(
          Tool.make("write_file", { parameters: { path: Schema.String }, success: Schema.String }),
          {
            approval: "required",
            handler: ({ path }) => Effect.as(Ref.update(writes, (n) => n + 1), `wrote ${path}`)
          }
        )
        const server = yield* serve(SessionStore.layerMemory, [
          ScriptedModel.reply(
            ScriptedModel.text("Hello "),
            ScriptedModel.text("from "),
            ScriptedModel.text("the page.")
          ),
          ScriptedModel.hanging(ScriptedModel.text("working on it")),
          ScriptedModel.textResponse("first queued, done."),
          ScriptedModel.toolCallResponse(ScriptedModel.toolCall("write_file", { path: "notes.txt" }, { id: "w1" })),
          ScriptedModel.textResponse("written."),
          ScriptedModel.hanging(ScriptedModel.text("a long answer"))
        ], {
          makeAgent: (log) =>
            Agent.make({
              session: log,
              tools: [write],
              hooks: { toolApproval: () => Effect.succeed({ kind: "ask" as const }) }
            })
        })
        const client = yield* server.client()
        const { id } = yield* client.sessions.create({ payload: { title: "from the browser" } })
        const b = yield* browser
        const page = yield* Effect.promise(() => b.newPage({ viewport: { width: 1100, height: 640 } }))
        yield* Effect.promise(async () => {
          await page.addInitScript("localStorage.setItem('harness-token', 'send-secret')")
          await page.goto(`${server.baseUrl}/#${id}`)
          await page.waitForSelector("text=connected")
          // The session list shows the session.
          assert.include((await texts(page, "#sessions li")).join(), "from the browser")

          // Enter on an idle agent starts a turn; the answer streams into the page.
          await send(page, "say hello")
          await page.waitForSelector(".assistant:has-text('Hello from the page.')")
          await page.waitForSelector(".turn:has-text('turn 1 completed')")

          // A turn that keeps running; two queued while it runs, one dropped.
          await send(page, "work")
          await page.waitForSelector(".assistant:has-text('working on it')")
          await page.fill("#prompt", "queued one")
          await page.click("#queue")
          await page.fill("#prompt", "queued two")
          await page.click("#queue")
          await page.waitForFunction("document.querySelectorAll('#inbox li').length === 2")
          await page.click("#inbox li:has-text('queued two') .drop")
          await page.waitForFunction("document.querySelectorAll('#inbox li').length === 1")
          assert.include((await texts(page, "#inbox li")).join(), "queued one")
          // Enter while the turn streams steers it: the steering waits for the turn's next step.
          await send(page, "keep it short")
          await page.waitForSelector("#inbox li:has-text('steering: keep it short')")
          mkdirSync(output, { recursive: true })
          await page.screenshot({ path: new URL("page.png", output).pathname })

          // Cancel keeping the inbox: the turn ends aborted and the kept items run next (the steering first).
          await page.click("#cancel-keep")
          await page.waitForSelector(".turn:has-text('turn 2 aborted')")
          await page.waitForSelector(".user:has-text('↪ keep it short')")
          await page.waitForSelector(".assistant:has-text('first queued, done.')")
          await page.waitForSelector(".turn:has-text('turn 3 completed')")
          await page.waitForFunction("document.querySelectorAll('#inbox li').length === 0")

          // A write waits for approval; the page lists it, Approve runs it once, its output expands.
          await send(page, "write the notes")
          await page.waitForSelector("#approvals li:has-text('write_file')")
          await page.screenshot({ path: new URL("approval.png", output).pathname })
          await page.click("#approvals li:has-text('write_file') .approve")
          await page.waitForSelector(".turn:has-text('turn 4 completed')")
          await page.waitForFunction("document.querySelectorAll('#approvals li').length === 0")
          await page.click("details.tool summary")
          await page.waitForSelector("details.tool[open] .output:has-text('wrote notes.txt')")
          assert.strictEqual(await page.textContent("details.tool summary"), "⚙ write_file ✓")

          // A turn running while the page reloads.
          await send(page, "a long one")
          await page.waitForSelector(".assistant:has-text('a long answer')")
          await page.reload()
          await page.waitForSelector("text=connected")
          await page.waitForSelector(".assistant:has-text('a long answer')")
        })
        const { duplicates, seqs } = yield* rendered(page)
        const log = yield* client.sessions.snapshot({ path: { id }, urlParams: { tail: 1 } })
        assert.strictEqual(duplicates, 0)
        assert.deepStrictEqual(seqs, Array.from({ length: log.lastSeq + 1 }, (_, i) => i))
        const shown = yield* Effect.promise(() => texts(page, "#log > div"))
        assert.deepStrictEqual(shown.filter((t) => t.startsWith("›")), [
          "› say hello",
          "› work",
          "› queued one",
          "› write the notes",
          "› a long one"
        ])
        assert.deepStrictEqual(shown.filter((t) => t.startsWith("↪")), ["↪ keep it short"])
        assert.deepStrictEqual(shown.filter((t) => t.startsWith("turn")), [
          "turn 1 completed",
          "turn 2 aborted",
          "turn 3 completed",
          "turn 4 completed"
        ])
        assert.strictEqual(yield* Ref.get(writes), 1)
        yield* client.agent.cancel({ path: { id }, payload: { cause: "user" } })
      }).pipe(Effect.scoped),
    180_000
  )
  it.live(
    "edit and reorder queued turns, then set and pause a goal: the page shows what the API answers (R245)",
    () =>
      Effect.gen(function*() {
        const server = yield* serve(SessionStore.layerMemory, [
          ScriptedModel.hanging(ScriptedModel.text("working on it")),
          ScriptedModel.hanging(ScriptedModel.text("on the goal"))
        ], { makeAgent: (log) => Goals.makeAgent({ session: log }).pipe(Effect.provide(NodeContext.layer)) })
        const client = yield* server.client()
        const { id } = yield* client.sessions.create({ payload: { title: "goals and edits" } })
        const path = { id }
        const b = yield* browser
        const page = yield* Effect.promise(() => b.newPage({ viewport: { width: 1100, height: 640 } }))
        const inboxTexts = Effect.map(
          client.agent.inbox({ path }),
          (items) => items.map((item) => item.content.map((block) => block.type === "text" ? block.text : "").join(""))
        )
        yield* Effect.promise(async () => {
          await page.addInitScript("localStorage.setItem('harness-token', 'send-secret')")
          await page.goto(`${server.baseUrl}/#${id}`)
          await page.waitForSelector("text=connected")
          await page.waitForSelector("#goal:has-text('no goal')")

          // A running turn, three queued behind it.
          await page.fill("#prompt", "work")
          await page.press("#prompt", "Enter")
          await page.waitForSelector(".assistant:has-text('working on it')")
          for (const text of ["first", "second", "third"]) {
            await page.fill("#prompt", text)
            await page.click("#queue")
          }
          await page.waitForFunction("document.querySelectorAll('#inbox li').length === 3")
          // Edit the second in place; move the third one up.
          await page.click("#inbox li:has-text('second') .edit")
          await page.fill("#inbox .edit-text", "second, edited")
          await page.click("#inbox .save")
          await page.waitForSelector("#inbox li:has-text('second, edited')")
          await page.click("#inbox li:has-text('third') .up")
          await page.waitForFunction(
            "[...document.querySelectorAll('#inbox li .text')].map((e) => e.textContent).join('|') === " +
              "'queued: first |queued: third |queued: second, edited '"
          )
        })
        assert.deepStrictEqual(yield* inboxTexts, ["first", "third", "second, edited"])

        // Discard the inbox with the turn; then a goal: set from the page, its round runs, pause it.
        yield* Effect.promise(async () => {
          await page.click("#cancel-drop")
          await page.waitForSelector(".turn:has-text('turn 1 aborted')")
          await page.waitForFunction("document.querySelectorAll('#inbox li').length === 0")
          await page.fill("#goal-objective", "ship the page")
          await page.click("#goal-set")
          await page.waitForSelector("#goal:has-text('ship the page · active')")
          await page.waitForSelector(".assistant:has-text('on the goal')")
          // The goal's messages fold away under one line each.
          assert.deepStrictEqual(await texts(page, "details.goal summary"), ["◎ goal change", "◎ goal round 1"])
          mkdirSync(output, { recursive: true })
          await page.screenshot({ path: new URL("goal.png", output).pathname })
          await page.click("#goal-pause")
          await page.waitForSelector("#goal:has-text('ship the page · paused')")
        })
        const status = yield* client.goal.status({ path })
        assert.strictEqual(status.goal?.objective, "ship the page")
        assert.strictEqual(status.goal?.phase, "paused")
        assert.deepStrictEqual(yield* inboxTexts, [])
        yield* client.agent.cancel({ path, payload: { cause: "user" } })
      }).pipe(Effect.scoped),
    120_000
  )
})
