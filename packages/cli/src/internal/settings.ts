/**
 * Resolution of the effective configuration: flags, then environment (through `Config`), then defaults.
 */
import { FileSystem, Path } from "@effect/platform"
import * as Budget from "@harness/agent/Budget"
import { Config, Duration, Effect, Either, Option, type Redacted, Schema } from "effect"
import { SettingsError } from "../CliError.js"
import type { Flags, McpServer, NamedSetting, Setting, Settings, StoreLocation } from "../Settings.js"
import * as Providers from "./providers.js"
import { redactText, redactUrl } from "./redact.js"
import * as Stores from "./stores.js"

/** Environment variables per setting, highest precedence first. */
export const environment = {
  workspace: ["HARNESS_WORKSPACE"],
  store: ["HARNESS_STORE"],
  model: ["HARNESS_MODEL", "LLM_MODEL"],
  baseUrl: ["HARNESS_BASE_URL", "LLM_BASE_URL"],
  apiKey: ["DEEPSEEK_API_KEY", "HARNESS_API_KEY", "LLM_API_KEY"],
  offline: ["HARNESS_OFFLINE"],
  pace: ["HARNESS_OFFLINE_PACE_MS"],
  doublePress: ["HARNESS_DOUBLE_PRESS_MS"],
  maxSteps: ["HARNESS_MAX_STEPS"],
  maxTurnTokens: ["HARNESS_MAX_TURN_TOKENS"],
  maxSessionTokens: ["HARNESS_MAX_SESSION_TOKENS"],
  maxSessionCost: ["HARNESS_MAX_SESSION_COST"],
  turnTimeout: ["HARNESS_TURN_TIMEOUT_S"],
  prices: ["HARNESS_PRICES"],
  contextWindow: ["HARNESS_CONTEXT_WINDOW"],
  contextWindows: ["HARNESS_CONTEXT_WINDOWS"],
  compactThreshold: ["HARNESS_COMPACT_THRESHOLD"]
} as const

/** What each setting means: the description every `Config` the CLI reads for it carries. */
export const descriptions: { readonly [K in keyof typeof environment]: string } = {
  workspace: "The directory the workspace tools are confined to.",
  store: `Where sessions are stored: ${Stores.inWords(Stores.syntaxes)}.`,
  model: "The model name.",
  baseUrl: "An OpenAI-compatible chat-completions server.",
  apiKey: "The model provider's API key.",
  offline: "Use the offline model even when an API key is configured.",
  pace: "The offline model's pause per word, in milliseconds.",
  doublePress: "Chat: how soon a second Ctrl-C counts as a double press (discard the inbox, or exit), in milliseconds.",
  maxSteps: "The most steps one turn may take before it ends with a budget stop.",
  maxTurnTokens: "The most tokens one turn may use.",
  maxSessionTokens: "The most tokens the whole session may use (counted from its log, across resumes).",
  maxSessionCost: "The most the whole session may cost, priced by the price table.",
  turnTimeout: "The most wall-clock time one turn may take, in seconds.",
  prices: "The price table: JSON {\"<model>\": {\"inputPerMillion\": n, \"outputPerMillion\": n}}.",
  contextWindow: "The model's context window in tokens: a request estimated past the compact threshold of it " +
    "compacts the history first.",
  contextWindows: "The context windows per model: JSON {\"<model>\": tokens}; the model's entry applies when no " +
    "--context-window or HARNESS_CONTEXT_WINDOW is given.",
  compactThreshold: "The share of the context window (0 < t ≤ 1) an estimated request may reach before the history " +
    "is compacted."
}

/** The largest offline pace, in milliseconds per word. */
const maxPace = 60_000

/** The bounds of the double-press window, in milliseconds. */
const doublePressBounds = { min: 200, max: 600_000 } as const

const fromEnv = <A>(setting: keyof typeof environment, read: (key: string) => Config.Config<A>) =>
  Effect.gen(function*() {
    for (const key of environment[setting]) {
      const value = yield* Config.option(Config.withDescription(read(key), descriptions[setting])).pipe(
        Effect.mapError((error) =>
          new SettingsError({ setting: key, message: `cannot read ${key}: ${redactText(String(error))}` })
        )
      )
      if (Option.isSome(value)) return Option.some<Setting<A>>({ value: value.value, origin: `env ${key}` })
    }
    return Option.none<Setting<A>>()
  })

/**
 * A setting read as text and checked by `parse` (which returns the value, or what is accepted): a value it refuses
 * fails with a `SettingsError` naming the variable, e.g. `HARNESS_OFFLINE="maybe" is not true or false`.
 */
const parsedEnv = <A>(
  setting: keyof typeof environment,
  parse: (text: string) => { readonly ok: A } | { readonly expected: string }
) =>
  Effect.flatMap(fromEnv(setting, (key) => Config.string(key)), (found) => {
    if (Option.isNone(found)) return Effect.succeed(Option.none<Setting<A>>())
    const parsed = parse(found.value.value)
    const key = found.value.origin.replace(/^env /, "")
    return "ok" in parsed
      ? Effect.succeed(Option.some<Setting<A>>({ value: parsed.ok, origin: found.value.origin }))
      : Effect.fail(
        new SettingsError({
          setting: key,
          message: `${key}=${JSON.stringify(redactText(found.value.value))} is not ${parsed.expected}`
        })
      )
  })

const booleanText = (text: string): { readonly ok: boolean } | { readonly expected: string } => {
  const word = text.trim().toLowerCase()
  if (["true", "yes", "on", "1"].includes(word)) return { ok: true }
  if (["false", "no", "off", "0"].includes(word)) return { ok: false }
  return { expected: "true or false (also yes/no, on/off, 1/0)" }
}

const millisText = (min: number, max: number) => (text: string) => {
  const trimmed = text.trim()
  const n = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN
  return Number.isSafeInteger(n) && n >= min && n <= max
    ? { ok: n }
    : { expected: `a whole number of milliseconds from ${min} to ${max}` }
}

const positiveIntText = (text: string) => {
  const trimmed = text.trim()
  const n = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN
  return Number.isSafeInteger(n) && n >= 1 ? { ok: n } : { expected: "a whole number ≥ 1" }
}

const positiveText = (text: string) => {
  const n = text.trim() === "" ? Number.NaN : Number(text.trim())
  return Number.isFinite(n) && n > 0 ? { ok: n } : { expected: "a number > 0" }
}

const PricesJson = Schema.parseJson(Schema.Record({
  key: Schema.String,
  value: Schema.Struct({
    inputPerMillion: Schema.NonNegative,
    outputPerMillion: Schema.NonNegative,
    cachedInputPerMillion: Schema.optional(Schema.NonNegative)
  })
}))

const pricesText = (text: string) =>
  Either.match(Schema.decodeUnknownEither(PricesJson)(text), {
    onLeft: () => ({
      expected:
        "a JSON object of prices, e.g. {\"deepseek-v4-flash\": {\"inputPerMillion\": 0.27, \"outputPerMillion\": 1.1}}"
    }),
    onRight: (ok) => ({ ok })
  })

const WindowsJson = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Int.pipe(Schema.positive()) }))

const windowsText = (text: string) =>
  Either.match(Schema.decodeUnknownEither(WindowsJson)(text), {
    onLeft: () => ({ expected: "a JSON object of context windows in tokens, e.g. {\"deepseek-v4-flash\": 128000}" }),
    onRight: (ok) => ({ ok })
  })

const thresholdText = (text: string) => {
  const n = text.trim() === "" ? Number.NaN : Number(text.trim())
  return n > 0 && n <= 1 ? { ok: n } : { expected: "a number in (0, 1], e.g. 0.8" }
}

/** A budget setting: the flag, else the environment, else `fallback`; a flag is checked like the environment. */
const budgetSetting = <A>(
  flag: Option.Option<A> | undefined,
  flagName: string,
  setting: keyof typeof environment,
  parse: (text: string) => { readonly ok: A } | { readonly expected: string },
  fallback: Setting<A | undefined>
) =>
  Effect.gen(function*() {
    if (flag !== undefined && Option.isSome(flag)) {
      const checked = parse(String(flag.value))
      if (!("ok" in checked)) {
        return yield* new SettingsError({
          setting: flagName,
          message: `${flagName} ${flag.value} is not ${checked.expected}`
        })
      }
      const given: Setting<A | undefined> = { value: checked.ok, origin: `flag ${flagName}` }
      return given
    }
    const found: Setting<A | undefined> = Option.getOrElse(yield* parsedEnv(setting, parse), () => fallback)
    return found
  })

const pick = <A, E>(
  flag: Option.Option<A>,
  flagName: string,
  env: Effect.Effect<Option.Option<Setting<A>>, E>
): Effect.Effect<Option.Option<Setting<A>>, E> =>
  Option.match(flag, {
    onNone: () => env,
    onSome: (value) => Effect.succeed(Option.some<Setting<A>>({ value, origin: `flag ${flagName}` }))
  })

/** The provider settings the CLI's own settings stand for (`model`, `base-url`, `api-key` read `LLM_*` too). */
const cliOwned: ReadonlySet<string> = new Set(["model", "baseUrl", "apiKey"])

const storeHelp = `use ${Stores.inWords(Stores.examples)}`

export const parseStore = (text: string, cwd: string, setting: string) =>
  Effect.gen(function*() {
    const path = yield* Path.Path
    // The text is echoed redacted: an unparsable PostgreSQL URL may still hold a password.
    const bad = (why: string) =>
      Effect.fail(
        new SettingsError({ setting, message: `${setting} ${JSON.stringify(redactText(text))} ${why}: ${storeHelp}` })
      )
    const parsed = Stores.parse(text, (location) => path.resolve(cwd, location))
    if (parsed === undefined) return yield* bad("is not a store")
    if ("invalid" in parsed) return yield* bad(parsed.invalid)
    return parsed
  })

export const showStore = (store: StoreLocation): string => Stores.kindOf(store).show(store)

const settingsError = (setting: string) => (error: unknown) =>
  new SettingsError({ setting, message: `cannot read ${setting}: ${String(error)}` })

export const resolve = (flags: Flags) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const cwd = process.cwd()

    const workspaceSetting = Option.getOrElse(
      yield* pick(flags.workspace, "--workspace", fromEnv("workspace", (key) => Config.string(key))),
      (): Setting<string> => ({ value: ".", origin: "default: the current directory" })
    )
    const workspace: Setting<string> = { ...workspaceSetting, value: path.resolve(cwd, workspaceSetting.value) }
    const info = yield* Effect.option(fs.stat(workspace.value))
    if (Option.isNone(info) || info.value.type !== "Directory") {
      return yield* new SettingsError({
        setting: workspace.origin.replace(/^(flag|env) /, ""),
        message: `the workspace ${JSON.stringify(workspace.value)} is not a directory (${workspace.origin})`
      })
    }
    if (path.parse(workspace.value).root === workspace.value) {
      return yield* new SettingsError({
        setting: workspace.origin.replace(/^(flag|env) /, ""),
        message: `the workspace ${JSON.stringify(workspace.value)} is the root of the file system: the tools would ` +
          `reach every file and the sessions would be stored in ${path.join(workspace.value, ".harness")}; ` +
          `use a project directory (${workspace.origin})`
      })
    }

    const storeText = yield* pick(flags.store, "--store", fromEnv("store", (key) => Config.string(key)))
    const store: Setting<StoreLocation> = yield* Option.match(storeText, {
      onNone: () =>
        Effect.succeed<Setting<StoreLocation>>({
          value: { _tag: "sqlite", filename: path.join(workspace.value, ".harness", "sessions.db") },
          origin: "default: .harness/sessions.db in the workspace"
        }),
      onSome: (text) =>
        Effect.map(
          parseStore(text.value, cwd, text.origin.replace(/^(flag|env) /, "")),
          (value): Setting<StoreLocation> => ({ value, origin: text.origin })
        )
    })

    const apiKey = Option.getOrElse(
      yield* fromEnv("apiKey", (key) => Config.redacted(key)),
      (): Setting<Redacted.Redacted<string> | undefined> => ({ value: undefined, origin: "not set" })
    )
    const baseUrl = Option.getOrElse(
      yield* pick(flags.baseUrl, "--base-url", fromEnv("baseUrl", (key) => Config.string(key))),
      (): Setting<string | undefined> => ({ value: undefined, origin: "default: DeepSeek's, when a key is set" })
    )
    if (baseUrl.value !== undefined && !URL.canParse(baseUrl.value)) {
      return yield* new SettingsError({
        setting: baseUrl.origin.replace(/^(flag|env) /, ""),
        message: `the base URL ${
          JSON.stringify(redactText(baseUrl.value))
        } is not a URL (e.g. http://localhost:8080/v1)`
      })
    }
    const offlineEnv = yield* parsedEnv("offline", booleanText)
    const provider: Setting<Providers.Name> = flags.offline
      ? { value: "offline", origin: "flag --offline" }
      : Option.isSome(offlineEnv) && offlineEnv.value.value
      ? { value: "offline", origin: offlineEnv.value.origin }
      : Providers.choose({ apiKey, baseUrl })
    const model = Option.getOrElse(
      yield* pick(flags.model, "--model", fromEnv("model", (key) => Config.string(key))),
      (): Setting<string> => Providers.providers[provider.value].defaultModel
    )
    const pace = Option.getOrElse(
      yield* parsedEnv("pace", millisText(0, maxPace)),
      (): Setting<number> => ({ value: 40, origin: "default" })
    )
    const doublePress = Option.getOrElse(
      yield* parsedEnv("doublePress", millisText(doublePressBounds.min, doublePressBounds.max)),
      (): Setting<number> => ({ value: 1000, origin: "default" })
    )
    const unset = { value: undefined, origin: "default: none" }
    const maxSteps = yield* budgetSetting(flags.maxSteps, "--max-steps", "maxSteps", positiveIntText, {
      value: Budget.defaultMaxSteps,
      origin: "default"
    })
    const maxTurnTokens = yield* budgetSetting(
      flags.maxTurnTokens,
      "--max-turn-tokens",
      "maxTurnTokens",
      positiveIntText,
      unset
    )
    const maxSessionTokens = yield* budgetSetting(
      flags.maxSessionTokens,
      "--max-session-tokens",
      "maxSessionTokens",
      positiveIntText,
      unset
    )
    const maxSessionCost = yield* budgetSetting(
      flags.maxSessionCost,
      "--max-session-cost",
      "maxSessionCost",
      positiveText,
      unset
    )
    const turnTimeout = yield* budgetSetting(flags.turnTimeout, "--turn-timeout", "turnTimeout", positiveText, unset)
    const prices = yield* budgetSetting(undefined, "HARNESS_PRICES", "prices", pricesText, unset)
    const contextWindows = yield* budgetSetting(
      undefined,
      "HARNESS_CONTEXT_WINDOWS",
      "contextWindows",
      windowsText,
      unset
    )
    const ownWindow = contextWindows.value?.[model.value]
    const contextWindow = yield* budgetSetting(
      flags.contextWindow,
      "--context-window",
      "contextWindow",
      positiveIntText,
      ownWindow !== undefined
        ? { value: ownWindow, origin: `env HARNESS_CONTEXT_WINDOWS (${JSON.stringify(model.value)})` }
        : contextWindows.value !== undefined
        ? { value: undefined, origin: `default: none (HARNESS_CONTEXT_WINDOWS has no ${JSON.stringify(model.value)})` }
        : { value: undefined, origin: "default: none (no automatic compaction)" }
    )
    const compactThreshold = yield* budgetSetting(
      flags.compactThreshold,
      "--compact-threshold",
      "compactThreshold",
      thresholdText,
      { value: undefined, origin: "default: the agent's, 0.8" }
    )
    if (maxSessionCost.value !== undefined && Budget.priceOf(prices.value, model.value) === undefined) {
      return yield* new SettingsError({
        setting: maxSessionCost.origin.replace(/^(flag|env) /, ""),
        message: `a session cost budget needs a price for the model ${JSON.stringify(model.value)}: ` +
          `set HARNESS_PRICES, e.g. {"${model.value}": {"inputPerMillion": 0.27, "outputPerMillion": 1.1}}`
      })
    }
    const budget = {
      maxSteps: { value: maxSteps.value ?? Budget.defaultMaxSteps, origin: maxSteps.origin },
      maxTurnTokens,
      maxSessionTokens,
      maxSessionCost,
      turnTimeout,
      prices
    }
    const llm = yield* Effect.forEach(
      Providers.ownSettings.filter((setting) => !cliOwned.has(setting.option)),
      (setting) =>
        Effect.map(
          Config.option(Config.withDescription(Config.string(setting.key), setting.description)),
          Option.match({
            onNone: (): NamedSetting => ({
              name: setting.key,
              value: setting.fallback,
              origin: "default",
              description: setting.description
            }),
            onSome: (text): NamedSetting => ({
              name: setting.key,
              value: setting.secret ? "<redacted>" : redactText(text),
              origin: `env ${setting.key}`,
              description: setting.description
            })
          })
        )
    ).pipe(Effect.mapError(settingsError("the provider settings")))
    // The MCP settings (and the package that checks them) are loaded only when there are some.
    const mcpFlags = flags.mcp ?? []
    const mcpFile = path.join(workspace.value, ".harness", "mcp.json")
    const mcp = mcpFlags.length === 0 && !(yield* Effect.orElseSucceed(fs.exists(mcpFile), () => false))
      ? []
      : yield* Effect.flatMap(
        Effect.promise(() => import("./mcpServers.js")),
        (McpServers) => McpServers.resolve(mcpFile, mcpFlags)
      )
    return {
      workspace,
      store,
      provider,
      model,
      baseUrl,
      apiKey,
      pace,
      doublePress,
      budget,
      contextWindow,
      contextWindows,
      compactThreshold,
      llm,
      mcp
    } satisfies Settings
  })

/** How an MCP server is shown: its command line, or its URL with any credential redacted. */
const showMcpServer = (server: McpServer): string =>
  "url" in server.value
    ? redactUrl(server.value.url)
    : [server.value.command, ...server.value.args].map((word) => (/\s/.test(word) ? JSON.stringify(word) : word))
      .join(" ")

export const render = (
  settings: Settings,
  options: { readonly describe?: boolean | undefined } = {}
): ReadonlyArray<string> => {
  const rows: Array<readonly [name: string, value: string, origin: string, description: string]> = [
    ["workspace", settings.workspace.value, settings.workspace.origin, descriptions.workspace],
    ["store", showStore(settings.store.value), settings.store.origin, descriptions.store],
    [
      "provider",
      settings.provider.value,
      settings.provider.origin,
      Providers.described
    ],
    ["model", settings.model.value, settings.model.origin, descriptions.model],
    [
      "base-url",
      settings.baseUrl.value === undefined ? "-" : redactUrl(settings.baseUrl.value),
      settings.baseUrl.origin,
      descriptions.baseUrl
    ],
    [
      "api-key",
      settings.apiKey.value === undefined ? "-" : "<redacted>",
      settings.apiKey.origin,
      descriptions.apiKey
    ],
    ["offline-pace", `${settings.pace.value} ms per word`, settings.pace.origin, descriptions.pace],
    ["double-press", `${settings.doublePress.value} ms`, settings.doublePress.origin, descriptions.doublePress],
    ...budgetRows(settings.budget),
    [
      "context-window",
      settings.contextWindow.value === undefined ? "-" : `${settings.contextWindow.value} tokens`,
      settings.contextWindow.origin,
      descriptions.contextWindow
    ],
    [
      "context-windows",
      settings.contextWindows.value === undefined
        ? "-"
        : Object.entries(settings.contextWindows.value).map(([model, tokens]) => `${model}=${tokens}`).join(", "),
      settings.contextWindows.origin,
      descriptions.contextWindows
    ],
    [
      "compact-threshold",
      settings.compactThreshold.value === undefined ? "-" : String(settings.compactThreshold.value),
      settings.compactThreshold.origin,
      descriptions.compactThreshold
    ],
    ...settings.llm.map(({ description, name, origin, value }) => [name, value, origin, description] as const),
    ...settings.mcp.map((server) =>
      [
        `mcp ${server.name}`,
        showMcpServer(server),
        server.origin,
        "An MCP server whose tools the agent gets."
      ] as const
    )
  ]
  const width = Math.max(...rows.map(([name]) => name.length))
  const valueWidth = Math.min(60, Math.max(...rows.map(([, value]) => value.length)))
  return rows.flatMap(([name, value, origin, description]) => {
    const line = `${name.padEnd(width)}  ${value.padEnd(valueWidth)}  (${origin})`
    return options.describe === true ? [line, `${" ".repeat(width + 2)}${description}`] : [line]
  })
}

const budgetRows = (budget: Settings["budget"]) => {
  const row = <A>(name: string, setting: Setting<A | undefined>, show: (value: A) => string, description: string) =>
    [name, setting.value === undefined ? "-" : show(setting.value), setting.origin, description] as const
  return [
    row("max-steps", budget.maxSteps, String, descriptions.maxSteps),
    row("max-turn-tokens", budget.maxTurnTokens, String, descriptions.maxTurnTokens),
    row("max-session-tokens", budget.maxSessionTokens, String, descriptions.maxSessionTokens),
    row("max-session-cost", budget.maxSessionCost, String, descriptions.maxSessionCost),
    row("turn-timeout", budget.turnTimeout, (s) => `${s} s`, descriptions.turnTimeout),
    row("prices", budget.prices, (p) => Object.keys(p).join(", "), descriptions.prices)
  ]
}

/** The agent's budgets (`Agent.Options.budget`) from the settings. */
export const agentBudget = (settings: Settings): Budget.Budget => {
  const { maxSessionCost, maxSessionTokens, maxSteps, maxTurnTokens, prices, turnTimeout } = settings.budget
  return {
    maxSteps: maxSteps.value,
    maxTurnTokens: maxTurnTokens.value,
    maxSessionTokens: maxSessionTokens.value,
    maxSessionCost: maxSessionCost.value,
    prices: prices.value,
    turnTimeout: turnTimeout.value === undefined ? undefined : Duration.seconds(turnTimeout.value)
  }
}

/** A word as a POSIX shell reads it back: as is when it is safe, single-quoted otherwise. */
const shellWord = (word: string): string =>
  /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`

/**
 * The flags a printed follow-up command must repeat to find the session the settings stored: `--store …` when the
 * store was chosen (a flag, or the environment), `--workspace …` when the default store lives in a workspace other
 * than `cwd`, nothing otherwise; `undefined` for a memory store, whose sessions are gone when the command ends.
 * Contract: never shows a credential (a PostgreSQL store from the environment is left to the environment).
 */
export const storeFlags = (settings: Settings, cwd: string): string | undefined => {
  const store = settings.store.value
  const kind = Stores.kindOf(store)
  if (!kind.durable) return undefined
  if (settings.store.origin.startsWith("default")) {
    return settings.workspace.value === cwd ? "" : ` --workspace ${shellWord(settings.workspace.value)}`
  }
  if (kind.secret && settings.store.origin.startsWith("env")) return ""
  return ` --store ${shellWord(showStore(store))}`
}
