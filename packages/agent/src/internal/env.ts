/**
 * The agent's environment: one record, built once by `agent.ts` and handed to every part of the agent. It holds what
 * the agent was made with (options, log, model, tools, limits, and the budgets and compaction settings `options.ts`
 * validates, declared here) and three parts, each with its own module: the state (`state.ts`), the live part
 * (`live.ts`) and the outbox (`outbox.ts`). Each module's functions take only the part they work on, so the record is
 * read where it is used and no module speaks for another.
 */
import type { LanguageModel, Tokenizer, Tool, Toolkit } from "@effect/ai"
import type { SessionEvent } from "@harness/domain"
import type { Options, Service } from "../Agent.js"
import type * as AgentTool from "../AgentTool.js"
import type * as Budget from "../Budget.js"
import type { RequestConfig } from "../Hooks.js"
import type { LiveParts } from "./live.js"
import type { OutboxParts } from "./outbox.js"
import type { StateParts } from "./state.js"

/**
 * Everything the agent's parts share: its state (with the log that guards it), its live part and its outbox, and what
 * it was made with.
 */
export interface Env extends StateParts, LiveParts, OutboxParts {
  readonly options: Options<unknown>
  readonly service: Service
  readonly model: LanguageModel.Service
  readonly tools: ReadonlyMap<string, AgentTool.AgentTool<unknown>>
  readonly toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> | undefined
  readonly descriptors: ReadonlyArray<SessionEvent.ToolDescriptor> | undefined
  readonly defaultConfig: RequestConfig
  readonly maxParallel: number
  /** `maxPending` and `overflow`, when the inbox is bounded (ADR 0050). */
  readonly bound: { readonly limit: number; readonly overflow: "reject" | "dropOldest" | "dropNewest" } | undefined
  /** The most characters a tool result's text may have (`maxToolResultChars`). */
  readonly maxToolResult: number
  /** The agent's budgets, validated (`budget.ts`, R154–R163). */
  readonly budget: Budgets
  /** `Options.compaction`, validated (`undefined`: no automatic compaction; `compact` uses the defaults). */
  readonly compaction: CompactionSettings | undefined
  /**
   * Whether the agent was created under a `Tracer` of the program's own (e.g. `@effect/opentelemetry`): only then
   * does it record its spans (ADR 0024, ADR 0028). Under Effect's default tracer nobody reads them.
   */
  readonly traced: boolean
}

/** The agent's budgets, validated: the step cap defaulted, the timeout in milliseconds. */
export interface Budgets {
  readonly maxSteps: number
  readonly maxTurnTokens: number | undefined
  readonly maxSessionTokens: number | undefined
  readonly maxSessionCost: number | undefined
  readonly prices: Readonly<Record<string, Budget.Price>> | undefined
  readonly turnTimeoutMs: number | undefined
  readonly warn: boolean
}

/** The compaction settings an agent was built with (`Options.compaction`), validated. */
export interface CompactionSettings {
  readonly contextWindow: number | undefined
  readonly threshold: number
  readonly instruction: string
  readonly model: LanguageModel.Service | undefined
  readonly modelLabel: string | undefined
  /** The provider's `Tokenizer`, when one was in the agent's context (R220). */
  readonly tokenizer: Tokenizer.Service | undefined
}
