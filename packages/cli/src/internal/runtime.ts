/**
 * What every command builds from the settings: the session store, the model, and the agent over a session with
 * the workspace tools. The PostgreSQL store and the chat-completions provider (with undici, a megabyte of the
 * bundle) are loaded only when the settings select them, so the commands that do not use them start sooner.
 */
import type { LanguageModel } from "@effect/ai"
import { FileSystem, Path } from "@effect/platform"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { Agent, Hooks } from "@harness/agent"
import { Goals } from "@harness/goal"
import type { ChatCompletions } from "@harness/llm"
import { type SessionLog, SessionStore } from "@harness/session"
import { JsonlStore } from "@harness/store-jsonl"
import { SqliteStore } from "@harness/store-sqlite"
import * as NodeWorkspaceTools from "@harness/tools/NodeWorkspaceTools"
import type { ConfigError, Scope } from "effect"
import { Config, Duration, Effect, Layer } from "effect"
import { CommandError } from "../CliError.js"
import * as OfflineModel from "../OfflineModel.js"
import type { Settings, StoreLocation } from "../Settings.js"
import * as McpServers from "./mcpServers.js"

/** The system prompt of every CLI agent. */
export const system = "You are Harness, a terse assistant working in the user's workspace. Use the workspace " +
  "tools (list_dir, read_file, find_files, grep, write_file, edit_file, shell) when a question is about files."

/** The session store a location names. SQLite creates its file's directory first. */
export const storeLayer = (
  store: StoreLocation
): Layer.Layer<SessionStore.SessionStore, SessionStore.SessionStoreError, FileSystem.FileSystem | Path.Path> => {
  switch (store._tag) {
    case "memory":
      return SessionStore.layerMemory
    case "jsonl":
      return JsonlStore.layer({ directory: store.directory })
    case "postgres":
      return Layer.unwrapEffect(
        Effect.map(
          Effect.promise(() => import("@harness/store-postgres")),
          ({ PostgresStore }) => PostgresStore.layer({ url: store.url })
        )
      )
    case "sqlite":
      return Layer.unwrapEffect(Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        yield* fs.makeDirectory(path.dirname(store.filename), { recursive: true }).pipe(
          Effect.mapError((e) =>
            new SessionStore.SessionStoreError({
              reason: "Io",
              message: `cannot create the directory of ${store.filename}: ${e.message}`
            })
          )
        )
        return SqliteStore.layer({ filename: store.filename })
      }))
  }
}

/** The model the settings select: the offline simulator, or the chat-completions provider. */
export const modelLayer = (settings: Settings): Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError> =>
  settings.provider.value === "offline"
    ? OfflineModel.layer({ pace: Duration.millis(settings.pace.value) })
    : Layer.unwrapEffect(Effect.map(
      Effect.promise(() => Promise.all([import("@harness/llm"), import("@effect/platform-node/NodeHttpClient")])),
      ([{ ChatCompletions }, NodeHttpClient]) =>
        ChatCompletions.layerConfig(
          Config.map(ChatCompletions.config, (options): ChatCompletions.Options => ({
            ...options,
            model: settings.model.value,
            baseUrl: settings.baseUrl.value ?? options.baseUrl,
            apiKey: settings.apiKey.value ?? options.apiKey
          }))
        ).pipe(Layer.provide(NodeHttpClient.layerUndici))
    ))

/** An agent and its goal service. */
export interface Running {
  readonly agent: Agent.Service
  readonly goals: Goals.Service
}

/**
 * An agent over `session` with the workspace tools and the goal system (its guard outermost, its tools first), in
 * the current scope. Command verifiers run in the workspace.
 */
export const makeAgent = (
  settings: Settings,
  session: SessionLog.Service,
  hooks: Hooks.Hooks = {}
): Effect.Effect<Running, CommandError, LanguageModel.LanguageModel | CommandExecutor | Scope.Scope> =>
  Effect.gen(function*() {
    const tools = yield* NodeWorkspaceTools.make({ root: settings.workspace.value }).pipe(
      Effect.mapError((e) => new CommandError({ reason: "Input", message: `the workspace tools: ${e.message}` }))
    )
    const mcp = settings.mcp.length === 0 ? [] : yield* McpServers.tools(settings.mcp)
    const plugin = yield* Goals.make({ workspace: settings.workspace.value }).pipe(
      Effect.mapError((e) => new CommandError({ reason: "Input", message: `the goal system: ${e.message}` }))
    )
    const agent = yield* Effect.mapError(
      Agent.make({
        session,
        system,
        tools: [...plugin.tools, ...tools, ...mcp],
        hooks: Hooks.compose(plugin.hooks, hooks),
        model: settings.model.value,
        provider: settings.provider.value
      }),
      (e) => new CommandError({ reason: "Input", message: `cannot build the agent: ${e.message}` })
    )
    const goals = yield* Effect.mapError(
      plugin.attach(agent),
      (e) => new CommandError({ reason: "Input", message: `cannot start goals: ${e.message}` })
    )
    return { agent, goals }
  })
