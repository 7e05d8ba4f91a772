/**
 * The CLI's effective configuration: each setting's value and where it came from (a flag, an environment variable
 * read through Effect `Config`, or the default). Secrets stay `Redacted` and are shown redacted. `harness config`
 * prints this; every other command builds its store and model from it.
 *
 * @since 0.0.0
 */
import type { FileSystem, Path } from "@effect/platform"
import type { Budget } from "@harness/agent"
import type { McpSettings } from "@harness/mcp"
import type { Effect, Option, Redacted } from "effect"
import type { SettingsError } from "./CliError.js"
import * as internal from "./internal/settings.js"

export {
  /**
   * A setting that cannot be used, re-exported from `CliError`.
   *
   * @since 0.0.0
   * @category errors
   */
  SettingsError
} from "./CliError.js"

/**
 * Where sessions are stored, parsed from `--store`: one member per row of the CLI's store table, which says how each
 * is named, shown and opened.
 *
 * @since 0.0.0
 * @category models
 */
export type StoreLocation =
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "jsonl"; readonly directory: string }
  | { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string> }
  | { readonly _tag: "memory" }

/**
 * One effective setting and its origin (`flag --store`, `env HARNESS_STORE`, `default`, …).
 *
 * @since 0.0.0
 * @category models
 */
export interface Setting<A> {
  readonly value: A
  readonly origin: string
}

/**
 * A setting of the chat-completions provider as the CLI shows it: its environment key, its value as text
 * (`<redacted>` for a secret that is set; the default as a person reads it when unset) and its origin.
 *
 * @since 0.0.0
 * @category models
 */
export interface NamedSetting extends Setting<string> {
  readonly name: string
  /** What the setting means (`ChatCompletions.configSettings`). */
  readonly description: string
}

/**
 * The global flags every command accepts.
 *
 * @since 0.0.0
 * @category models
 */
export interface Flags {
  readonly model: Option.Option<string>
  readonly baseUrl: Option.Option<string>
  readonly store: Option.Option<string>
  readonly workspace: Option.Option<string>
  readonly offline: boolean
  /** `--mcp <name>=<command line>` or `<name>=<url>`, repeatable: MCP servers whose tools the agent gets. */
  readonly mcp?: ReadonlyArray<string> | undefined
  /** `--max-steps`: the most steps one turn may take (default 50). */
  readonly maxSteps?: Option.Option<number> | undefined
  /** `--max-turn-tokens`: the most tokens one turn may use. */
  readonly maxTurnTokens?: Option.Option<number> | undefined
  /** `--max-session-tokens`: the most tokens the session may use, across resumes. */
  readonly maxSessionTokens?: Option.Option<number> | undefined
  /** `--max-session-cost`: the most the session may cost, priced by `HARNESS_PRICES`. */
  readonly maxSessionCost?: Option.Option<number> | undefined
  /** `--turn-timeout`: the most seconds one turn may take. */
  readonly turnTimeout?: Option.Option<number> | undefined
  /** `--context-window`: the model's context window in tokens; past 80% of it the history is compacted. */
  readonly contextWindow?: Option.Option<number> | undefined
  /** `--compact-threshold`: the share of the context window a request may reach before compaction (0 < t ≤ 1). */
  readonly compactThreshold?: Option.Option<number> | undefined
}

/**
 * The budgets (R154–R163): flags, else `HARNESS_MAX_STEPS`, `HARNESS_MAX_TURN_TOKENS`, `HARNESS_MAX_SESSION_TOKENS`,
 * `HARNESS_MAX_SESSION_COST`, `HARNESS_TURN_TIMEOUT_S` and the price table `HARNESS_PRICES` (JSON).
 *
 * @since 0.0.0
 * @category models
 */
export interface BudgetSettings {
  readonly maxSteps: Setting<number>
  readonly maxTurnTokens: Setting<number | undefined>
  readonly maxSessionTokens: Setting<number | undefined>
  readonly maxSessionCost: Setting<number | undefined>
  /** Seconds. */
  readonly turnTimeout: Setting<number | undefined>
  readonly prices: Setting<Readonly<Record<string, Budget.Price>> | undefined>
}

/**
 * An MCP server whose tools the agent gets, from `.harness/mcp.json` in the workspace or a `--mcp` flag (which
 * replaces a file entry of the same name).
 *
 * @since 0.0.0
 * @category models
 */
export interface McpServer extends Setting<typeof McpSettings.ServerSettings.Type> {
  readonly name: string
}

/**
 * The effective configuration.
 *
 * @since 0.0.0
 * @category models
 */
export interface Settings {
  /** The workspace root the tools are confined to (an absolute path). */
  readonly workspace: Setting<string>
  readonly store: Setting<StoreLocation>
  /**
   * `offline` (the local simulator) or `chat-completions` (DeepSeek or an OpenAI-compatible server): one name per
   * row of the CLI's provider table, which says when each is chosen and how its model is built.
   */
  readonly provider: Setting<"offline" | "chat-completions">
  readonly model: Setting<string>
  readonly baseUrl: Setting<string | undefined>
  readonly apiKey: Setting<Redacted.Redacted<string> | undefined>
  /** The offline model's pause per word, in milliseconds (0 to 60 000). */
  readonly pace: Setting<number>
  /** Chat: how soon a second Ctrl-C counts as a double press, in milliseconds (200 to 600 000; default 1 000). */
  readonly doublePress: Setting<number>
  /** The turn's and the session's budgets. */
  readonly budget: BudgetSettings
  /**
   * `--context-window`, else `HARNESS_CONTEXT_WINDOW`, else the model's entry in `contextWindows`: the model's context
   * window in tokens. With one, a step whose estimated request passes `compactThreshold` of it compacts the history
   * first (ADR 0052, R144–R153); without, nothing compacts
   * by itself (`/compact` and `harness sessions compact` still do).
   */
  readonly contextWindow: Setting<number | undefined>
  /**
   * `HARNESS_CONTEXT_WINDOWS`: the context window per model (JSON `{"<model>": tokens}`, like the price table). The
   * model's entry is the context window when neither `--context-window` nor `HARNESS_CONTEXT_WINDOW` is given.
   */
  readonly contextWindows: Setting<Readonly<Record<string, number>> | undefined>
  /**
   * `--compact-threshold` or `HARNESS_COMPACT_THRESHOLD`: the share of the context window (0 < t ≤ 1) an estimated
   * request may reach before the history is compacted; unset, the agent's default (0.8).
   */
  readonly compactThreshold: Setting<number | undefined>
  /**
   * The provider's own `LLM_*` settings (`ChatCompletions.configSettings`) but the three above that stand for them
   * (`model`, `base-url`, `api-key`); they apply when the provider is `chat-completions`.
   */
  readonly llm: ReadonlyArray<NamedSetting>
  /** The MCP servers, in order: the settings file's, then the flags'. */
  readonly mcp: ReadonlyArray<McpServer>
}

/**
 * The environment variables the CLI reads, in order of precedence per setting.
 *
 * @since 0.0.0
 * @category utils
 */
export const environment = internal.environment

/**
 * What each setting means (every `Config` the CLI reads for it carries this description).
 *
 * @since 0.0.0
 * @category utils
 */
export const descriptions = internal.descriptions

/**
 * Resolves the effective configuration: flags win over the environment, which wins over the defaults. The
 * default store is the SQLite file `.harness/sessions.db` in the workspace; the provider is `offline` unless an
 * API key or a base URL is configured (and `--offline` is not given).
 *
 * Contract: a bad `--store` (or `HARNESS_STORE`), a workspace that is not a directory or is the root of the file
 * system, or an environment value the CLI cannot use (`HARNESS_OFFLINE=maybe`, a pace that is not a whole number
 * of milliseconds up to 60 000) fails with `SettingsError` naming the setting; nothing is created. No message
 * shows a credential of a URL (see `showStore`).
 *
 * @since 0.0.0
 * @category utils
 */
export const resolve: (
  flags: Flags
) => Effect.Effect<Settings, SettingsError, FileSystem.FileSystem | Path.Path> = internal
  .resolve

/**
 * Parses a `--store` value: `sqlite:<file>`, `jsonl:<dir>`, `postgres://…` (or `postgresql://…`), or `memory`.
 * Relative paths are taken from `cwd`.
 *
 * @since 0.0.0
 * @category utils
 */
export const parseStore: (
  text: string,
  cwd: string,
  setting: string
) => Effect.Effect<StoreLocation, SettingsError, Path.Path> = internal.parseStore

/**
 * How a store location is shown: file paths as given, a PostgreSQL URL with its password (in the userinfo or as a
 * `password=` query parameter) and any other secret query value redacted.
 *
 * @since 0.0.0
 * @category utils
 */
export const showStore: (store: StoreLocation) => string = internal.showStore

/**
 * The configuration as readable lines (`name  value  (origin)`), secrets redacted; with `describe`, each followed
 * by an indented line saying what the setting means.
 *
 * @since 0.0.0
 * @category utils
 */
export const render: (
  settings: Settings,
  options?: { readonly describe?: boolean | undefined }
) => ReadonlyArray<string> = internal.render
