/**
 * The agent's options: validated once at creation (a typed `AgentConfigError` naming the bad option), and the
 * transport definition of its tools — what `@effect/ai` is told about them, and what `request/header` records.
 */
import { Tool, type Toolkit } from "@effect/ai"
import type { SessionEvent } from "@harness/domain"
import { Json } from "@harness/domain"
import { Duration, Effect, Option, ParseResult, Schema } from "effect"
import type { Options } from "../Agent.js"
import { AgentConfigError } from "../AgentError.js"
import type { AgentTool } from "../AgentTool.js"
import * as Budget from "../Budget.js"
import * as Compaction from "./compaction.js"
import type { Budgets, CompactionSettings } from "./env.js"

const toolName = /^[a-zA-Z0-9_-]{1,64}$/

const isJsonObject = (value: Json.JsonValue | undefined): value is Json.JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const permissive = Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/**
 * Advertises each tool through a permissive transport definition — parameters accept any object, annotated with
 * the tool's real JSON Schema — because `@effect/ai` decodes every `tool-call` part against the toolkit and would
 * fail the whole stream on arguments that do not match. The loop decodes arguments itself (ADR 0005).
 */
const transport = (tools: ReadonlyArray<AgentTool<unknown>>) => {
  const record: Record<string, Tool.Any> = {}
  const descriptors: Array<SessionEvent.ToolDescriptor> = []
  for (const tool of tools) {
    const schema = Tool.getJsonSchemaFromSchemaAst(tool.tool.parametersSchema.ast)
    const copied = Json.copyJson(schema)
    const parameters = "issue" in copied ? undefined : copied.value
    if (!isJsonObject(parameters)) {
      return new AgentConfigError({
        reason: "UnusableToolSchema",
        option: "tools",
        message: `tool "${tool.name}" has a parameter schema that is not a JSON object schema`
      })
    }
    const description = tool.tool.description
    record[tool.name] = Tool.make(tool.name, description === undefined ? {} : { description }).setParameters(
      permissive.annotations({ jsonSchema: schema })
    )
    descriptors.push(
      description === undefined
        ? { name: tool.name, parameters }
        : { name: tool.name, description, parameters }
    )
  }
  const toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> = {
    tools: record,
    // Tool-call resolution is disabled: the loop runs the tools itself.
    handle: () => Effect.dieMessage("Harness runs tool calls itself; the toolkit handler is never called")
  }
  return { toolkit, descriptors }
}

const message = (text: (actual: unknown) => string) => ({
  message: (issue: ParseResult.ParseIssue) => ({ message: text(issue.actual), override: true })
})

/**
 * The options that are data, as a Schema (the rest are services, effects and functions): each refusal names its
 * option, which the first issue's path gives.
 */
const DataOptions = Schema.Struct({
  maxParallelToolCalls: Schema.optional(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isSafeInteger(n) && n >= 1),
      Schema.annotations(
        message((actual) =>
          `maxParallelToolCalls must be a positive integer (1 runs calls one at a time), got ${String(actual)}`
        )
      )
    )
  ),
  maxToolResultChars: Schema.optional(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isSafeInteger(n) && n >= 1),
      Schema.annotations(
        message((actual) => `maxToolResultChars must be a positive integer, got ${String(actual)}`)
      )
    )
  ),
  model: Schema.optional(
    Schema.String.pipe(Schema.minLength(1), Schema.annotations(message(() => "model must be a non-empty route label")))
  ),
  provider: Schema.optional(Schema.String),
  maxPending: Schema.optional(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isSafeInteger(n) && n >= 1),
      Schema.annotations(message((actual) => `maxPending must be a positive integer, got ${String(actual)}`))
    )
  ),
  overflow: Schema.optional(
    Schema.Literal("reject", "dropOldest", "dropNewest").annotations(
      message((actual) =>
        `overflow must be "reject", "dropOldest" or "dropNewest", got ${JSON.stringify(actual) ?? String(actual)}`
      )
    )
  ),
  restoredInbox: Schema.optional(
    Schema.Literal("wake", "park").annotations(
      message((actual) => `restoredInbox must be "wake" or "park", got ${JSON.stringify(actual) ?? String(actual)}`)
    )
  ),
  contextWindow: Schema.optional(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isSafeInteger(n) && n >= 1),
      Schema.annotations(
        message((actual) => `compaction.contextWindow must be a positive integer (tokens), got ${String(actual)}`)
      )
    )
  ),
  threshold: Schema.optional(
    Schema.Number.pipe(
      Schema.filter((n) => n > 0 && n <= 1),
      Schema.annotations(
        message((actual) => `compaction.threshold must be a number in (0, 1], got ${String(actual)}`)
      )
    )
  ),
  tools: Schema.Array(
    Schema.String.pipe(
      Schema.pattern(toolName),
      Schema.annotations(
        message((actual) => `tool name "${String(actual)}" is invalid: use 1 to 64 letters, digits, "_" or "-"`)
      )
    )
  ).pipe(
    Schema.filter((names) => {
      const twice = names.find((name, index) => names.indexOf(name) !== index)
      return twice === undefined || `two tools are named "${twice}"`
    })
  )
})

const positiveInt = (name: string) =>
  Schema.Number.pipe(
    Schema.filter((n) => Number.isSafeInteger(n) && n >= 1),
    Schema.annotations(message((actual) => `budget.${name} must be a positive integer, got ${String(actual)}`))
  )

const nonNegative = (name: string) =>
  Schema.Number.pipe(
    Schema.filter((n) => Number.isFinite(n) && n >= 0),
    Schema.annotations(message((actual) => `${name} must be a finite number ≥ 0, got ${String(actual)}`))
  )

const Price = Schema.Struct({
  inputPerMillion: nonNegative("a price's inputPerMillion"),
  outputPerMillion: nonNegative("a price's outputPerMillion"),
  cachedInputPerMillion: Schema.optional(nonNegative("a price's cachedInputPerMillion"))
})

/** `budget` (R154–R163): every count a positive integer, the cost finite and positive, the timeout a duration. */
const BudgetOptions = Schema.Struct({
  maxSteps: Schema.optional(positiveInt("maxSteps")),
  maxTurnTokens: Schema.optional(positiveInt("maxTurnTokens")),
  maxSessionTokens: Schema.optional(positiveInt("maxSessionTokens")),
  maxSessionCost: Schema.optional(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isFinite(n) && n > 0),
      Schema.annotations(
        message((actual) => `budget.maxSessionCost must be a finite number > 0, got ${String(actual)}`)
      )
    )
  ),
  prices: Schema.optional(Schema.Record({ key: Schema.String, value: Price })),
  turnTimeout: Schema.optional(
    Schema.Unknown.pipe(
      Schema.filter((input) => {
        const duration = Duration.decodeUnknown(input)
        return Option.isSome(duration) && Duration.greaterThan(duration.value, Duration.zero) &&
          Duration.isFinite(duration.value)
      }),
      Schema.annotations(
        message((actual) => `budget.turnTimeout must be a finite, positive duration, got ${String(actual)}`)
      )
    )
  ),
  warn: Schema.optional(Schema.Boolean)
})

const decodeBudget = Schema.decodeUnknownEither(BudgetOptions, { errors: "first" })

const budgets = (options: Options<unknown>): Budgets | AgentConfigError => {
  const given = options.budget ?? {}
  const decoded = decodeBudget(given)
  if (decoded._tag === "Left") {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
    return new AgentConfigError({ option: "budget", message: issue?.message ?? decoded.left.message })
  }
  const budget = decoded.right
  if (budget.maxSessionCost !== undefined) {
    const model = options.model ?? "default"
    if (Budget.priceOf(budget.prices, model) === undefined) {
      return new AgentConfigError({
        option: "budget",
        message: `budget.maxSessionCost needs a price for the model "${model}": add it to budget.prices`
      })
    }
  }
  const timeout = given.turnTimeout === undefined ? undefined : Duration.toMillis(Duration.decode(given.turnTimeout))
  return {
    maxSteps: budget.maxSteps ?? Budget.defaultMaxSteps,
    maxTurnTokens: budget.maxTurnTokens,
    maxSessionTokens: budget.maxSessionTokens,
    maxSessionCost: budget.maxSessionCost,
    prices: budget.prices,
    turnTimeoutMs: timeout,
    warn: budget.warn ?? true
  }
}

const decodeOptions = Schema.decodeUnknownEither(DataOptions, { errors: "first" })

/** The first issue of a refusal, as an `AgentConfigError` naming the option. */
const configError = (error: ParseResult.ParseError): AgentConfigError => {
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
  return new AgentConfigError({ option: String(issue?.path[0] ?? "options"), message: issue?.message ?? error.message })
}

/** The default bound on a tool result's text: 1 MiB of characters. */
const defaultMaxToolResultChars = 1_048_576

const noTools: ReadonlyMap<string, AgentTool<unknown>> = new Map()

/** Validates the options: the tool pool cap, the tools (names, parameter schemas), the labels, `restoredInbox`. */
export const validate = Effect.fnUntraced(function*(options: Options<unknown>) {
  const decoded = decodeOptions({
    maxParallelToolCalls: options.maxParallelToolCalls,
    maxToolResultChars: options.maxToolResultChars,
    model: options.model,
    provider: options.provider,
    maxPending: options.maxPending,
    overflow: options.overflow,
    restoredInbox: options.restoredInbox,
    contextWindow: options.compaction?.contextWindow,
    threshold: options.compaction?.threshold,
    tools: (options.tools ?? []).map((tool) => tool.name)
  })
  if (decoded._tag === "Left") return yield* configError(decoded.left)
  const maxParallel = decoded.right.maxParallelToolCalls ?? 10
  const maxToolResult = decoded.right.maxToolResultChars ?? defaultMaxToolResultChars
  // Agents without tools share one empty map (a map of its own was ≈ 0.2 KB of every idle agent, ADR 0040).
  const tools: ReadonlyMap<string, AgentTool<unknown>> = options.tools === undefined || options.tools.length === 0
    ? noTools
    : new Map(options.tools.map((tool) => [tool.name, tool]))
  const advertised = tools.size === 0 ? undefined : transport([...tools.values()])
  if (advertised instanceof AgentConfigError) return yield* advertised
  const budget = budgets(options)
  if (budget instanceof AgentConfigError) return yield* budget
  const bound = decoded.right.maxPending === undefined
    ? undefined
    : { limit: decoded.right.maxPending, overflow: decoded.right.overflow ?? "reject" }
  const given = options.compaction
  const compaction: CompactionSettings | undefined = given === undefined ? undefined : {
    contextWindow: decoded.right.contextWindow,
    threshold: decoded.right.threshold ?? Compaction.defaultThreshold,
    instruction: given.instruction ?? Compaction.defaultInstruction,
    model: given.model,
    modelLabel: given.modelLabel,
    tokenizer: undefined
  }
  return { maxParallel, maxToolResult, tools, advertised, bound, budget, compaction }
})
