/**
 * The models the CLI can run on, as one table: when each provider is chosen, its default model, the settings of its
 * own it reads (what `harness config` lists and checks), and how its layer is built. A provider's package is loaded
 * only when its layer is built, so the table loads with the settings at start-up. Adding a provider is a name in
 * `Settings.provider` and its row here (the compiler asks for the row).
 */
import type { LanguageModel } from "@effect/ai"
import type { ChatCompletions } from "@harness/llm"
import * as ChatCompletionsSettings from "@harness/llm/ChatCompletionsSettings"
import type { ConfigError } from "effect"
import { Config, Duration, Effect, Layer, type Redacted } from "effect"
import type { SettingsError } from "../CliError.js"
import type { Setting, Settings } from "../Settings.js"
import { loadedLayer } from "./loadedLayer.js"

/** A provider's name, as `Settings.provider` holds it. */
export type Name = Settings["provider"]["value"]

/** The settings that choose a provider when no `--offline` forces the offline model. */
interface Given {
  readonly apiKey: Setting<Redacted.Redacted<string> | undefined>
  readonly baseUrl: Setting<string | undefined>
}

/** One provider: a row of the table. */
interface Provider {
  /** What choosing it means, for `harness config --describe`. */
  readonly description: string
  /**
   * Why the settings choose this provider (the origin `harness config` shows), or `undefined` when they do not.
   * Rows are asked in table order; when none answers, the {@link fallback} runs.
   */
  readonly chosenBy: (given: Given) => string | undefined
  /** The model name when neither `--model` nor the environment gives one. */
  readonly defaultModel: Setting<string>
  /** The settings of its own it reads from the environment (`harness config` lists them). */
  readonly settings: ReadonlyArray<ChatCompletionsSettings.ConfigSetting>
  /** Checks the settings it would refuse, before any command runs; run when one of `settings` is set. */
  readonly check?: ((settings: Settings) => Effect.Effect<void, SettingsError>) | undefined
  /** The model, from its package (loaded now). */
  readonly layer: (settings: Settings) => Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError>
}

/** Every provider, in the order that chooses one. */
export const providers: { readonly [K in Name]: Provider } = {
  "chat-completions": {
    description: "DeepSeek or an OpenAI-compatible server, when an API key or a base URL is set",
    chosenBy: ({ apiKey, baseUrl }) =>
      apiKey.value !== undefined
        ? `an API key is set (${apiKey.origin})`
        : baseUrl.value !== undefined
        ? `a base URL is set (${baseUrl.origin})`
        : undefined,
    defaultModel: { value: ChatCompletionsSettings.defaultModel, origin: "default" },
    settings: ChatCompletionsSettings.configSettings,
    check: (settings) =>
      Effect.flatMap(Effect.promise(() => import("./providerCheck.js")), (check) => check.check(settings)),
    // The CLI's model, base URL and key (which read `LLM_*` too) over the provider's own configuration.
    layer: (settings) =>
      loadedLayer(
        () => Promise.all([import("@harness/llm"), import("@effect/platform-node/NodeHttpClient")]),
        ([{ ChatCompletions }, NodeHttpClient]) =>
          ChatCompletions.layerConfig(
            Config.map(ChatCompletions.config, (options): ChatCompletions.Options => ({
              ...options,
              model: settings.model.value,
              baseUrl: settings.baseUrl.value ?? options.baseUrl,
              apiKey: settings.apiKey.value ?? options.apiKey
            }))
          ).pipe(Layer.provide(NodeHttpClient.layerUndici))
      )
  },
  offline: {
    description: "the local simulator, no API key and no network: the default, forced by --offline or HARNESS_OFFLINE",
    chosenBy: () => undefined, // chosen by --offline, HARNESS_OFFLINE or as the fallback
    defaultModel: { value: "offline", origin: "default: the offline model" },
    settings: [],
    layer: (settings) =>
      loadedLayer(
        () => import("../OfflineModel.js"),
        (OfflineModel) => OfflineModel.layer({ pace: Duration.millis(settings.pace.value) })
      )
  }
}

/** The provider when no row chooses one. */
const fallback: Setting<Name> = { value: "offline", origin: "default: no API key is configured" }

/** The provider the settings choose, and why: the first row whose `chosenBy` answers, else the {@link fallback}. */
export const choose = (given: Given): Setting<Name> => {
  // `Object.entries` widens the keys to `string`: they are the table's names.
  for (const [name, provider] of Object.entries(providers) as ReadonlyArray<[Name, Provider]>) {
    const origin = provider.chosenBy(given)
    if (origin !== undefined) return { value: name, origin }
  }
  return fallback
}

/** Every provider's own settings, in table order. */
export const ownSettings: ReadonlyArray<ChatCompletionsSettings.ConfigSetting> = Object.values(providers).flatMap((
  provider
) => provider.settings)

/**
 * Runs the check of every provider one of whose own settings comes from the environment (so a value it would refuse
 * is a setting error in every command, whichever provider runs).
 */
export const check = (settings: Settings): Effect.Effect<void, SettingsError> =>
  Effect.forEach(
    Object.values(providers),
    (provider) =>
      provider.check !== undefined && settings.llm.some((setting) =>
          setting.origin.startsWith("env") && provider.settings.some((own) => own.key === setting.name)
        )
        ? provider.check(settings)
        : Effect.void,
    { discard: true }
  )

/** A short description of every provider, for `harness config --describe`. */
export const described: string = Object.entries(providers).map(([name, provider]) => `${name}: ${provider.description}`)
  .join("; ")
