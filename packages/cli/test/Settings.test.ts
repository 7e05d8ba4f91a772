/**
 * The CLI's settings as a user sets them — flags and environment variables — resolved in process over a map of
 * variables: which one wins, what `harness config` shows (never a credential), and which values are refused with
 * exit code 2 (the `config` command itself included).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option } from "effect"
import * as Cli from "../src/Cli.js"
import * as Settings from "../src/Settings.js"

const noFlags: Settings.Flags = {
  model: Option.none(),
  baseUrl: Option.none(),
  store: Option.none(),
  workspace: Option.none(),
  offline: false
}

/** Runs `effect` with exactly `env` as the environment (`LLM_*` keys nest under `LLM`, as in the provider). */
const withEnv = (env: Readonly<Record<string, string>>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.withConfigProvider(effect, ConfigProvider.fromMap(new Map(Object.entries(env)), { pathDelim: "_" }))

const resolve = (env: Readonly<Record<string, string>>, flags: Partial<Settings.Flags> = {}) =>
  Settings.resolve({ ...noFlags, ...flags }).pipe(withEnv(env), Effect.provide(NodeContext.layer))

/** `harness …args` in process: its failure's exit code, or 0. */
const exitOf = (env: Readonly<Record<string, string>>, ...args: ReadonlyArray<string>) =>
  Cli.run(["node", "harness", ...args]).pipe(
    withEnv(env),
    Effect.provide(NodeContext.layer),
    Effect.either,
    Effect.map(Either.match({ onLeft: (failure) => Cli.exitCode(failure), onRight: () => 0 }))
  )

const shown = (settings: Settings.Settings) => Settings.render(settings).join("\n")

describe("settings: precedence (#46)", () => {
  it.effect("HARNESS_MODEL wins over LLM_MODEL, and --model over both", () =>
    Effect.gen(function*() {
      const both = yield* resolve({ HARNESS_MODEL: "from-harness", LLM_MODEL: "from-llm" })
      assert.strictEqual(both.model.value, "from-harness")
      assert.strictEqual(both.model.origin, "env HARNESS_MODEL")
      const llm = yield* resolve({ LLM_MODEL: "from-llm" })
      assert.strictEqual(llm.model.value, "from-llm")
      const flag = yield* resolve({ HARNESS_MODEL: "from-harness" }, { model: Option.some("from-flag") })
      assert.strictEqual(flag.model.value, "from-flag")
    }))

  it.effect("HARNESS_OFFLINE=false leaves the provider to the key; true (or 1, yes) selects the offline model", () =>
    Effect.gen(function*() {
      const key = { DEEPSEEK_API_KEY: "sk-test" }
      assert.strictEqual((yield* resolve({ ...key, HARNESS_OFFLINE: "false" })).provider.value, "chat-completions")
      assert.strictEqual((yield* resolve({ ...key, HARNESS_OFFLINE: "0" })).provider.value, "chat-completions")
      for (const yes of ["true", "1", "yes", "ON"]) {
        const settings = yield* resolve({ ...key, HARNESS_OFFLINE: yes })
        assert.strictEqual(settings.provider.value, "offline", yes)
        assert.strictEqual(settings.provider.origin, "env HARNESS_OFFLINE")
      }
      assert.strictEqual((yield* resolve(key)).provider.value, "chat-completions")
    }))
})

describe("settings: no credential is shown (#37.6, #46)", () => {
  const secret = "hunter2-Zq9"

  it.effect("a PostgreSQL store's password, in the userinfo or as password= in the query, is redacted", () =>
    Effect.gen(function*() {
      for (
        const url of [
          `postgres://harness:${secret}@db.example:5432/sessions`,
          `postgresql://harness@db.example/sessions?sslmode=require&password=${secret}`,
          `postgres://harness:${secret}@db.example/sessions?password=${secret}`
        ]
      ) {
        const settings = yield* resolve({}, { store: Option.some(url) })
        const text = shown(settings)
        assert.notInclude(text, secret, url)
        assert.include(text, "db.example")
        assert.notInclude(Settings.showStore(settings.store.value), secret)
      }
    }))

  it.effect("a base URL's password and secret query values (api_key, key, token, sig, …) are redacted", () =>
    Effect.gen(function*() {
      const urls = [
        `https://user:${secret}@llm.example/v1`,
        `https://llm.example/v1?api_key=${secret}`,
        `https://llm.example/v1?key=${secret}&model=m`,
        `https://llm.example/v1?token=${secret}`,
        `https://llm.example/v1?access_token=${secret}`,
        `https://llm.example/v1?sig=${secret}&se=2030`,
        `https://llm.example/v1?X-Amz-Signature=${secret}`
      ]
      for (const url of urls) {
        const fromFlag = shown(yield* resolve({}, { baseUrl: Option.some(url) }))
        assert.notInclude(fromFlag, secret, url)
        assert.include(fromFlag, "llm.example")
        assert.notInclude(shown(yield* resolve({ LLM_BASE_URL: url })), secret, url)
      }
      // What is not a secret stays readable.
      assert.include(
        shown(yield* resolve({}, { baseUrl: Option.some(`https://llm.example/v1?key=${secret}&model=m`) })),
        "model=m"
      )
    }))

  it.effect("an unparsable PostgreSQL URL is refused (exit code 2) without echoing its password", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(resolve({}, { store: Option.some(`postgres://harness:${secret}@db:port/x`) }))
      assert.strictEqual(error._tag, "SettingsError")
      assert.notInclude(error.message, secret)
      assert.include(error.message, "is not a valid URL")
      const env = yield* Effect.flip(resolve({ HARNESS_STORE: `postgres://harness:${secret}@db:port/x` }))
      assert.notInclude(error.message + env.message, secret)
    }))
})

describe("settings: values the CLI cannot use exit with code 2 (#37.8)", () => {
  const refused: ReadonlyArray<readonly [string, string]> = [
    ["HARNESS_OFFLINE", "maybe"],
    ["HARNESS_OFFLINE_PACE_MS", "abc"],
    ["HARNESS_OFFLINE_PACE_MS", "-5"],
    ["HARNESS_OFFLINE_PACE_MS", "99999999999999999999"],
    ["HARNESS_DOUBLE_PRESS_MS", "soon"],
    ["LLM_TEMPERATURE", "hot"],
    ["LLM_TEMPERATURE", "7"],
    ["LLM_IDLE_TIMEOUT", "forever"],
    ["LLM_MAX_RETRIES", "-1"],
    ["LLM_HEADERS", "{not json"],
    ["LLM_THINKING", "sometimes"]
  ]

  it.effect("each bad value fails `harness config` with exit code 2, naming the variable", () =>
    Effect.gen(function*() {
      for (const [key, value] of refused) {
        assert.strictEqual(yield* exitOf({ [key]: value }, "config"), 2, `${key}=${value}`)
      }
      // The same values, good, are accepted.
      assert.strictEqual(
        yield* exitOf({
          HARNESS_OFFLINE: "false",
          HARNESS_OFFLINE_PACE_MS: "0",
          LLM_TEMPERATURE: "0.3",
          LLM_IDLE_TIMEOUT: "30 seconds",
          LLM_MAX_RETRIES: "0",
          LLM_HEADERS: "{\"X-Team\":\"a\"}"
        }, "config"),
        0
      )
    }))

  it.effect("the refusal names the variable and says what it takes", () =>
    Effect.gen(function*() {
      const offline = yield* Effect.flip(resolve({ HARNESS_OFFLINE: "maybe" }))
      assert.strictEqual(offline.setting, "HARNESS_OFFLINE")
      assert.include(offline.message, "HARNESS_OFFLINE=\"maybe\" is not true or false")
      const pace = yield* Effect.flip(resolve({ HARNESS_OFFLINE_PACE_MS: "99999999999999999999" }))
      assert.strictEqual(pace.setting, "HARNESS_OFFLINE_PACE_MS")
      assert.include(pace.message, "from 0 to 60000")
    }))

  it.effect("the root of the file system is refused as the workspace", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(resolve({}, { workspace: Option.some("/") }))
      assert.strictEqual(error._tag, "SettingsError")
      assert.include(error.message, "the root of the file system")
      const env = yield* Effect.flip(resolve({ HARNESS_WORKSPACE: "/" }))
      assert.strictEqual(env.setting, "HARNESS_WORKSPACE")
      assert.strictEqual(yield* exitOf({}, "config", "--workspace", "/"), 2)
    }))
})

describe("settings: budgets (R162)", () => {
  it.effect("R162: budgets come from flags, else the environment; the step limit defaults to 50; config shows them", () =>
    Effect.gen(function*() {
      const defaults = yield* resolve({})
      assert.deepStrictEqual(defaults.budget.maxSteps, { value: 50, origin: "default" })
      assert.strictEqual(defaults.budget.maxSessionTokens.value, undefined)
      const env = {
        HARNESS_MAX_STEPS: "8",
        HARNESS_MAX_SESSION_TOKENS: "20000",
        HARNESS_MAX_SESSION_COST: "0.5",
        HARNESS_TURN_TIMEOUT_S: "90",
        HARNESS_PRICES: JSON.stringify({ offline: { inputPerMillion: 1, outputPerMillion: 2 } })
      }
      const fromEnv = yield* resolve(env)
      assert.deepStrictEqual(fromEnv.budget.maxSteps, { value: 8, origin: "env HARNESS_MAX_STEPS" })
      assert.strictEqual(fromEnv.budget.maxSessionCost.value, 0.5)
      assert.deepStrictEqual(Object.keys(fromEnv.budget.prices.value ?? {}), ["offline"])
      const flagged = yield* resolve(env, { maxSteps: Option.some(3), maxTurnTokens: Option.some(4000) })
      assert.deepStrictEqual(flagged.budget.maxSteps, { value: 3, origin: "flag --max-steps" })
      assert.deepStrictEqual(flagged.budget.maxTurnTokens, { value: 4000, origin: "flag --max-turn-tokens" })
      const lines = shown(flagged)
      assert.match(lines, /max-steps\s+3\s+\(flag --max-steps\)/)
      assert.match(lines, /turn-timeout\s+90 s\s+\(env HARNESS_TURN_TIMEOUT_S\)/)
    }))

  it.effect("R162: a bad budget, or a cost budget without a price for the model, is refused with exit code 2", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* exitOf({ HARNESS_MAX_STEPS: "0" }, "config"), 2)
      assert.strictEqual(yield* exitOf({ HARNESS_PRICES: "{not json" }, "config"), 2)
      assert.strictEqual(yield* exitOf({}, "config", "--max-steps", "-1"), 2)
      const unpriced = yield* Effect.either(resolve({ HARNESS_MAX_SESSION_COST: "1" }))
      assert.isTrue(Either.isLeft(unpriced))
      if (Either.isLeft(unpriced)) assert.include(unpriced.left.message, "needs a price for the model \"offline\"")
      assert.strictEqual(yield* exitOf({ HARNESS_MAX_SESSION_COST: "1" }, "config"), 2)
    }))
})

describe("settings: context window (R146)", () => {
  it.effect("R146: --context-window, else HARNESS_CONTEXT_WINDOW, else none; config shows it; a bad one exits 2", () =>
    Effect.gen(function*() {
      const defaults = yield* resolve({})
      assert.deepStrictEqual(defaults.contextWindow, {
        value: undefined,
        origin: "default: none (no automatic compaction)"
      })
      assert.match(shown(defaults), /context-window\s+-\s+\(default: none \(no automatic compaction\)\)/)
      const env = { HARNESS_CONTEXT_WINDOW: "128000" }
      const fromEnv = yield* resolve(env)
      assert.deepStrictEqual(fromEnv.contextWindow, { value: 128000, origin: "env HARNESS_CONTEXT_WINDOW" })
      assert.match(shown(fromEnv), /context-window\s+128000 tokens\s+\(env HARNESS_CONTEXT_WINDOW\)/)
      const flagged = yield* resolve(env, { contextWindow: Option.some(64000) })
      assert.deepStrictEqual(flagged.contextWindow, { value: 64000, origin: "flag --context-window" })
      assert.strictEqual(yield* exitOf({}, "config", "--context-window", "64000"), 0)
      assert.strictEqual(yield* exitOf({ HARNESS_CONTEXT_WINDOW: "0" }, "config"), 2)
      assert.strictEqual(yield* exitOf({ HARNESS_CONTEXT_WINDOW: "lots" }, "config"), 2)
      assert.strictEqual(yield* exitOf({}, "config", "--context-window", "-5"), 2)
      const bad = yield* Effect.either(resolve({}, { contextWindow: Option.some(0) }))
      assert.isTrue(Either.isLeft(bad))
      if (Either.isLeft(bad)) assert.include(bad.left.message, "--context-window 0 is not")
    }))

  it.effect("R221: HARNESS_CONTEXT_WINDOWS gives the model's window when neither the flag nor HARNESS_CONTEXT_WINDOW does", () =>
    Effect.gen(function*() {
      const table = { HARNESS_CONTEXT_WINDOWS: JSON.stringify({ "deepseek-v4-flash": 128000, offline: 4000 }) }
      const offline = yield* resolve(table)
      assert.deepStrictEqual(offline.contextWindow, {
        value: 4000,
        origin: "env HARNESS_CONTEXT_WINDOWS (\"offline\")"
      })
      assert.match(shown(offline), /context-window\s+4000 tokens\s+\(env HARNESS_CONTEXT_WINDOWS \("offline"\)\)/)
      assert.match(
        shown(offline),
        /context-windows\s+deepseek-v4-flash=128000, offline=4000\s+\(env HARNESS_CONTEXT_WINDOWS\)/
      )
      const deepseek = yield* resolve(table, { model: Option.some("deepseek-v4-flash") })
      assert.strictEqual(deepseek.contextWindow.value, 128000)
      const unlisted = yield* resolve(table, { model: Option.some("other") })
      assert.deepStrictEqual(unlisted.contextWindow, {
        value: undefined,
        origin: "default: none (HARNESS_CONTEXT_WINDOWS has no \"other\")"
      })
      const single = yield* resolve({ ...table, HARNESS_CONTEXT_WINDOW: "8000" })
      assert.deepStrictEqual(single.contextWindow, { value: 8000, origin: "env HARNESS_CONTEXT_WINDOW" })
      const flagged = yield* resolve(table, { contextWindow: Option.some(2000) })
      assert.deepStrictEqual(flagged.contextWindow, { value: 2000, origin: "flag --context-window" })
      assert.strictEqual(yield* exitOf({ HARNESS_CONTEXT_WINDOWS: "{\"offline\": 0}" }, "config"), 2)
      assert.strictEqual(yield* exitOf({ HARNESS_CONTEXT_WINDOWS: "4000" }, "config"), 2)
      const bad = yield* Effect.either(resolve({ HARNESS_CONTEXT_WINDOWS: "{\"offline\": 1.5}" }))
      assert.isTrue(Either.isLeft(bad))
      if (Either.isLeft(bad)) assert.include(bad.left.message, "a JSON object of context windows")
    }))

  it.effect("R222: --compact-threshold, else HARNESS_COMPACT_THRESHOLD, else the agent's 0.8; outside (0, 1] exits 2", () =>
    Effect.gen(function*() {
      const defaults = yield* resolve({})
      assert.deepStrictEqual(defaults.compactThreshold, { value: undefined, origin: "default: the agent's, 0.8" })
      assert.match(shown(defaults), /compact-threshold\s+-\s+\(default: the agent's, 0.8\)/)
      const fromEnv = yield* resolve({ HARNESS_COMPACT_THRESHOLD: "0.5" })
      assert.deepStrictEqual(fromEnv.compactThreshold, { value: 0.5, origin: "env HARNESS_COMPACT_THRESHOLD" })
      assert.match(shown(fromEnv), /compact-threshold\s+0.5\s+\(env HARNESS_COMPACT_THRESHOLD\)/)
      const flagged = yield* resolve({ HARNESS_COMPACT_THRESHOLD: "0.5" }, { compactThreshold: Option.some(1) })
      assert.deepStrictEqual(flagged.compactThreshold, { value: 1, origin: "flag --compact-threshold" })
      assert.strictEqual(yield* exitOf({}, "config", "--compact-threshold", "0.9"), 0)
      for (const bad of ["0", "1.5", "-0.2", "most"]) {
        assert.strictEqual(yield* exitOf({ HARNESS_COMPACT_THRESHOLD: bad }, "config"), 2, bad)
      }
      assert.strictEqual(yield* exitOf({}, "config", "--compact-threshold", "2"), 2)
    }))
})
