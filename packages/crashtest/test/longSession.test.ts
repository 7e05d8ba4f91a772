/**
 * The long session (R223, ADR 0060, R144–R153): a session of many turns against the CLI's offline
 * model with a small context window, on real SQLite and JSONL files, SIGKILLed at seeded points (summary requests in
 * flight among them) and resumed each time. `HARNESS_LONG_TURNS` (default 60) and `HARNESS_LONG_KILLS` (default
 * 3) size it; a manual run: `HARNESS_LONG_TURNS=2000 HARNESS_LONG_KILLS=20 npx vitest run --project crashtest
 * longSession`. The SQLite session's provider gives the agent a word `Tokenizer`; the JSONL one gives none, so its
 * agent estimates with the byte heuristic (R146).
 */
import { NodeContext } from "@effect/platform-node"
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as LongSessionCampaign from "../src/LongSessionCampaign.js"

const turns = Number(process.env.HARNESS_LONG_TURNS ?? "60")
const kills = Number(process.env.HARNESS_LONG_KILLS ?? "3")
// Real processes on a shared machine: a generous deadline that grows with the session.
const timeout = Math.max(600_000, turns * 1_000)

/** The child's Node arguments: one bundle for both campaigns. */
class Child extends Context.Tag("longSession/Child")<Child, ReadonlyArray<string>>() {}

const campaign = (backend: "sqlite" | "jsonl", tokenizer: boolean, seed: number) =>
  Effect.gen(function*() {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), `harness-long-${backend}-`))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(directory, { recursive: true, force: true })))
    const started = Date.now()
    const report = yield* LongSessionCampaign.campaign(
      yield* Child,
      { backend, directory, turns, window: 1000, threshold: 0.7, tokenizer, seed },
      kills
    )
    console.log(`long session (${backend}): ${JSON.stringify({ ...report, seconds: (Date.now() - started) / 1000 })}`)
    assert.deepStrictEqual(report.problems, [])
    assert.strictEqual(report.turns, turns)
    assert.strictEqual(report.kills.length, kills, "every planned kill landed")
    assert.isTrue(
      report.kills.some((k) => k.startsWith("KILL summary")),
      "a kill while a summary request was in flight"
    )
    assert.isAtLeast(report.compactions.automatic, 3)
  }).pipe(Effect.scoped, Effect.provide(NodeContext.layer))

layer(Layer.scoped(Child, LongSessionCampaign.runner), { timeout: 120_000, excludeTestServices: true })(
  "a long session with automatic compactions, killed and resumed",
  (it) => {
    it.effect(
      "SQLite, word Tokenizer: every request within the window, notes each logged once, goals intact, checkLog clean",
      () => campaign("sqlite", true, 41),
      timeout
    )
    it.effect(
      "JSONL, byte heuristic: every request within the window, notes each logged once, goals intact, checkLog clean",
      () => campaign("jsonl", false, 52),
      timeout
    )
  }
)
