/**
 * Property: random combinations of flags and environment variables — the model from `--model`, `HARNESS_MODEL`
 * and `LLM_MODEL`; `HARNESS_OFFLINE` spelled every way it is accepted; API keys; base URLs and store URLs that carry
 * passwords and secret query values; `LLM_HEADERS` — resolve to the settings the README's table documents, and what
 * `harness config` prints never shows a credential. (There is no settings file: flags, then the environment, then
 * defaults.) The expected settings are computed by a small model of the documented rules, written apart from the
 * implementation.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import * as ChatCompletionsSettings from "@harness/llm/ChatCompletionsSettings"
import { ConfigProvider, Effect, FastCheck as fc, Option } from "effect"
import * as Settings from "../src/Settings.js"

/** A credential: alphanumeric (so it fits in a URL as is), with a prefix nothing else in the output has. */
const secret = fc.stringMatching(/^[A-Za-z0-9]{6,12}$/).map((s) => `Sx${s}`)

/** A URL that carries `password` (or none): in its userinfo or as a secret query value. */
const url = (scheme: "https" | "postgres", host: string) =>
  fc.tuple(secret, fc.constantFrom("userinfo", "query", "both", "none")).map(([password, where]) => {
    const user = where === "userinfo" || where === "both" ? `harness:${password}@` : ""
    const query = where === "query" || where === "both"
      ? `?${scheme === "postgres" ? "password" : "api_key"}=${password}`
      : ""
    const path = scheme === "postgres" ? "/sessions" : "/v1"
    return { text: `${scheme}://${user}${host}${path}${query}`, secrets: where === "none" ? [] : [password] }
  })

const offlineWords = {
  true: ["true", "TRUE", "yes", "on", "1", " Yes "],
  false: ["false", "False", "no", "off", "0", " OFF "]
} as const

interface Case {
  readonly flags: {
    readonly model?: string | undefined
    readonly baseUrl?: { readonly text: string; readonly secrets: ReadonlyArray<string> } | undefined
    readonly store?: { readonly text: string; readonly secrets: ReadonlyArray<string> } | undefined
    readonly offline: boolean
  }
  readonly env: {
    readonly HARNESS_MODEL?: string | undefined
    readonly LLM_MODEL?: string | undefined
    readonly HARNESS_OFFLINE?: { readonly text: string; readonly value: boolean } | undefined
    readonly DEEPSEEK_API_KEY?: string | undefined
    readonly HARNESS_API_KEY?: string | undefined
    readonly LLM_API_KEY?: string | undefined
    readonly HARNESS_BASE_URL?: { readonly text: string; readonly secrets: ReadonlyArray<string> } | undefined
    readonly LLM_BASE_URL?: { readonly text: string; readonly secrets: ReadonlyArray<string> } | undefined
    readonly HARNESS_STORE?: { readonly text: string; readonly secrets: ReadonlyArray<string> } | undefined
    readonly LLM_HEADERS?: string | undefined
  }
}

const maybe = <A>(arbitrary: fc.Arbitrary<A>) => fc.option(arbitrary, { nil: undefined, freq: 2 })
const modelName = (prefix: string) => fc.integer({ min: 1, max: 9 }).map((n) => `${prefix}-model-${n}`)
const store = fc.oneof(
  url("postgres", "db.example:5432"),
  fc.constantFrom("memory", "sqlite:state/sessions.db", "jsonl:state/sessions").map((text) => ({
    text,
    secrets: []
  }))
)

const caseOf: fc.Arbitrary<Case> = fc.record({
  flags: fc.record({
    model: maybe(modelName("flag")),
    baseUrl: maybe(url("https", "flag.example")),
    store: maybe(store),
    offline: fc.boolean()
  }),
  env: fc.record({
    HARNESS_MODEL: maybe(modelName("harness")),
    LLM_MODEL: maybe(modelName("llm")),
    HARNESS_OFFLINE: maybe(
      fc.boolean().chain((value) =>
        fc.constantFrom(...offlineWords[value ? "true" : "false"]).map((text) => ({ text, value }))
      )
    ),
    DEEPSEEK_API_KEY: maybe(secret),
    HARNESS_API_KEY: maybe(secret),
    LLM_API_KEY: maybe(secret),
    HARNESS_BASE_URL: maybe(url("https", "harness.example")),
    LLM_BASE_URL: maybe(url("https", "llm.example")),
    HARNESS_STORE: maybe(store),
    LLM_HEADERS: maybe(secret.map((token) => `{"Authorization":"Bearer ${token}"}`))
  })
})

/** The environment as variables. */
const variables = (env: Case["env"]): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue
    out[key] = typeof value === "string" ? value : value.text
  }
  return out
}

/** Every credential the case holds. */
const credentials = ({ env, flags }: Case): ReadonlyArray<string> => [
  ...(flags.baseUrl?.secrets ?? []),
  ...(flags.store?.secrets ?? []),
  ...[env.DEEPSEEK_API_KEY, env.HARNESS_API_KEY, env.LLM_API_KEY].filter((k) => k !== undefined),
  ...(env.HARNESS_BASE_URL?.secrets ?? []),
  ...(env.LLM_BASE_URL?.secrets ?? []),
  ...(env.HARNESS_STORE?.secrets ?? []),
  ...(env.LLM_HEADERS === undefined ? [] : [env.LLM_HEADERS.slice(`{"Authorization":"Bearer `.length, -2)])
]

/** The first of `candidates` that is set, as a value and its origin. */
const first = <A>(candidates: ReadonlyArray<readonly [A | undefined, string]>) =>
  candidates.find(([value]) => value !== undefined) as readonly [A, string] | undefined

/** The README's rules: flags, then the environment (first variable wins), then defaults. */
const expected = ({ env, flags }: Case) => {
  const apiKey = first([
    [env.DEEPSEEK_API_KEY, "env DEEPSEEK_API_KEY"],
    [env.HARNESS_API_KEY, "env HARNESS_API_KEY"],
    [env.LLM_API_KEY, "env LLM_API_KEY"]
  ])
  const baseUrl = first([
    [flags.baseUrl?.text, "flag --base-url"],
    [env.HARNESS_BASE_URL?.text, "env HARNESS_BASE_URL"],
    [env.LLM_BASE_URL?.text, "env LLM_BASE_URL"]
  ])
  const offline = flags.offline || env.HARNESS_OFFLINE?.value === true ||
    (apiKey === undefined && baseUrl === undefined)
  const model = first([
    [flags.model, "flag --model"],
    [env.HARNESS_MODEL, "env HARNESS_MODEL"],
    [env.LLM_MODEL, "env LLM_MODEL"]
  ]) ?? [offline ? "offline" : ChatCompletionsSettings.defaultModel, "default"]
  const store = first([[flags.store?.text, "flag --store"], [env.HARNESS_STORE?.text, "env HARNESS_STORE"]])
  return {
    provider: offline ? "offline" : "chat-completions",
    model,
    apiKey: apiKey?.[1] ?? "not set",
    baseUrl: baseUrl?.[1],
    store: store?.[1]
  }
}

/** Resolves the settings with exactly `env` as the environment (`LLM_*` keys nest under `LLM`). */
const resolve = ({ env, flags }: Case) =>
  Settings.resolve({
    model: Option.fromNullable(flags.model),
    baseUrl: Option.fromNullable(flags.baseUrl?.text),
    store: Option.fromNullable(flags.store?.text),
    workspace: Option.none(),
    offline: flags.offline
  }).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables(env))), { pathDelim: "_" })),
    Effect.provide(NodeContext.layer)
  )

describe("settings: property", () => {
  it.effect.prop(
    "flags and environment resolve by the documented precedence; HARNESS_OFFLINE's value counts; config shows no credential",
    [caseOf],
    ([c]) =>
      Effect.gen(function*() {
        const settings = yield* resolve(c)
        const want = expected(c)
        // The provider: --offline, else HARNESS_OFFLINE's value (false is not offline), else a key or base URL.
        assert.strictEqual(settings.provider.value, want.provider, "provider")
        if (!c.flags.offline && c.env.HARNESS_OFFLINE !== undefined && c.env.HARNESS_OFFLINE.value) {
          assert.strictEqual(settings.provider.origin, "env HARNESS_OFFLINE")
        }
        // The model: --model, then HARNESS_MODEL, then LLM_MODEL, then the provider's default.
        assert.strictEqual(settings.model.value, want.model[0], "model")
        if (want.model[1] !== "default") assert.strictEqual(settings.model.origin, want.model[1])
        // The API key (never a flag): DEEPSEEK_API_KEY, then HARNESS_API_KEY, then LLM_API_KEY.
        assert.strictEqual(settings.apiKey.origin, want.apiKey, "api key")
        // The base URL: --base-url, then HARNESS_BASE_URL, then LLM_BASE_URL.
        if (want.baseUrl === undefined) assert.isUndefined(settings.baseUrl.value)
        else assert.strictEqual(settings.baseUrl.origin, want.baseUrl, "base url")
        // The store: --store, then HARNESS_STORE, then the default in the workspace.
        if (want.store === undefined) assert.match(settings.store.origin, /^default/)
        else assert.strictEqual(settings.store.origin, want.store, "store")
        // What `harness config` prints (with its descriptions) shows no credential, wherever it came from.
        const shown = Settings.render(settings, { describe: true }).join("\n")
        for (const credential of credentials(c)) assert.notInclude(shown, credential)
      }).pipe(Effect.orDie),
    { fastCheck: { numRuns: 200 } }
  )
})
