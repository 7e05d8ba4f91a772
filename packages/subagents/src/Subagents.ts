/**
 * Subagents: a child `Agent` on its own durable session, spawned by a parent's tool call (`SubagentTool`). The
 * child is a full agent with an inbox: while it runs, the parent's program or a person finds it here by its session
 * id and steers it, queues a followup, withdraws from its inbox or cancels it, with the ordinary `Agent.Service`.
 *
 * The link is durable on both sides (ADR 0055): the child's session id is derived from the parent's session id and
 * the spawning `tool/call` ({@link childIdOf}), so the parent's `tool/call` names its child before the child exists,
 * and the child's prompt carries a `subagent` source naming its parent and that call.
 *
 * @since 0.0.0
 */
import type { LanguageModel } from "@effect/ai"
import type { Agent, AgentTool, Hooks } from "@harness/agent"
import type { Ids } from "@harness/domain"
import type { SessionLogError, Turn } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import type { Effect, Scope } from "effect"
import { Context, Layer } from "effect"
import * as outcome from "./internal/outcome.js"
import * as internal from "./internal/service.js"
import type { SubagentError } from "./SubagentError.js"

/**
 * How a child's run ended, as the parent's tool call answers it (the call's structured output, logged as the
 * `tool/result` text):
 * - `completed`: its last turn completed; `answer` is its last assistant text;
 * - `cancelled`: a cancel (the parent's program, a person, or the parent's own cancel) stopped it; `answer` is
 *   what it had said so far;
 * - `failed`: its last turn failed (`reason` says how), or it could not start;
 * - `interrupted`: a crash cut it (reported on the parent's resume, see {@link Service.resume});
 * - `started`: a background child was started; its answer comes later as context in the parent.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Outcome: typeof outcome.Outcome = outcome.Outcome
/**
 * @since 0.0.0
 * @category models
 */
export type Outcome = typeof Outcome.Type

/**
 * What a child is made of: its name, system prompt, model, tools (normally a subset of the parent's) and whether it
 * runs in the background.
 *
 * @since 0.0.0
 * @category models
 */
export interface Spec {
  /** The subagent's name: the tool's name, and the `agent` of the child's `subagent` source. */
  readonly name: string
  readonly system?: string | undefined
  /** The route label recorded in the child's `request/header` (default: the agent's default). */
  readonly model?: string | undefined
  readonly provider?: string | undefined
  /** The child's own model; when absent it uses the parent's `LanguageModel` (the one in the tool's context). */
  readonly languageModel?: LanguageModel.Service | undefined
  /** The child's tools; none when absent. */
  readonly tools?: ReadonlyArray<AgentTool.AgentTool> | undefined
  readonly maxParallelToolCalls?: number | undefined
  /**
   * `true`: the spawning call answers `started` at once and the parent goes on; the child's outcome arrives in the
   * parent later as injected context (`inject`: model-visible, never runs the parent's model). Default `false`.
   */
  readonly background?: boolean | undefined
}

/**
 * A child of this process, as {@link Service.list} shows it. `state` is `running` until its run ends, then its
 * outcome's status.
 *
 * @since 0.0.0
 * @category models
 */
export interface Child {
  readonly id: Ids.SessionId
  readonly parent: Ids.SessionId
  readonly callId: Ids.ToolCallId
  readonly agent: string
  readonly background: boolean
  readonly state: "running" | Outcome["status"]
}

/**
 * A stored session and the children its tool calls spawned, as `harness sessions show` renders them. `agent` and
 * `spawnedBy` come from the session's `subagent` source (absent for a root); `last` is how its last turn ended
 * (`open` when a turn is open, `none` before any turn).
 *
 * @since 0.0.0
 * @category models
 */
export interface Tree {
  readonly id: Ids.SessionId
  readonly agent?: string | undefined
  readonly spawnedBy?: { readonly parent: Ids.SessionId; readonly callId: Ids.ToolCallId } | undefined
  readonly last: Turn.TurnEndReason["kind"] | "open" | "none"
  readonly children: ReadonlyArray<Tree>
}

/**
 * The children of this process.
 *
 * @since 0.0.0
 * @category services
 */
export interface Service {
  /**
   * Runs a child for a parent's call (whose `tool/call` must be in the parent's log, else it dies): creates its
   * session (id {@link childIdOf}), makes its agent, sends `task` as
   * a `followup` with a `subagent` source, and — in the foreground — answers once the child is idle, with how its
   * last turn ended and its last assistant text.
   *
   * Contract: the child is listed from the moment its agent exists until its run ends (then `get` answers
   * `finished`). Its tool approvals go to the `approval` hook given to {@link make} (without it, a call needing
   * approval is denied, as in any agent without the hook). Interrupting a foreground spawn (the parent's cancel
   * under the tool's `interrupt` policy) cancels the child with cause `parent`, waits until it is idle, then
   * disposes it and closes its session. A background child runs in this service's scope; its outcome is injected
   * into the parent. A child that cannot start (its session id exists, a store failure, an invalid option)
   * answers `failed`.
   */
  readonly spawn: (
    spec: Spec,
    task: string,
    link: { readonly parent: Agent.Service; readonly callId: Ids.ToolCallId }
  ) => Effect.Effect<Outcome, never, LanguageModel.LanguageModel>
  /** The children spawned in this process, in spawn order, finished ones included. */
  readonly list: Effect.Effect<ReadonlyArray<Child>>
  /**
   * A running child's agent: `steer`, `followup`, `inject`, `withdraw`, `cancel` it like any agent. Fails with
   * `SubagentError` `unknown` or `finished`.
   */
  readonly get: (id: Ids.SessionId) => Effect.Effect<Agent.Service, SubagentError>
  /**
   * After a crash, reports to a reopened parent the children a crash left without an answer in its log.
   *
   * Contract: a child is reported when the parent's log spawned it (its session exists under {@link childIdOf})
   * and either the call was cut (crash repair answered it `TOOL_OUTCOME_UNKNOWN`) or it was a background child
   * whose outcome never arrived. Each such child's session is opened — so its own crash repair runs and its log
   * is well-formed — and closed again, and its outcome (`interrupted` when the crash cut its turn) is injected into
   * the parent as context naming the child's session. A child already reported is not reported again. The child is
   * not run: its restored inbox stays in its session.
   */
  readonly resume: (parent: Agent.Service) => Effect.Effect<ReadonlyArray<Outcome>, SessionLogError.SessionLogError>
}

/**
 * The subagents of the current context.
 *
 * @since 0.0.0
 * @category services
 */
export class Subagents extends Context.Tag("@harness/subagents/Subagents")<Subagents, Service>() {}

/**
 * Options of {@link make}: the parent's approval hook, which decides the children's tool approvals too.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  readonly approval?: Hooks.ToolApproval<never> | undefined
}

/**
 * Makes the service over the `SessionStore` in context (children's sessions live in the parent's store); closing
 * the scope disposes the background children.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make: (options?: Options) => Effect.Effect<Service, never, Scope.Scope | SessionStore.SessionStore> =
  internal.make

/**
 * The service as a layer.
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Subagents, never, SessionStore.SessionStore> =>
  Layer.scoped(Subagents, make(options))

/**
 * The session id of the child a parent's call spawns: `<parent>~<seq>`, where `seq` is the parent's `tool/call` event
 * for that call. Contract: a pure function of the two, so the parent's `tool/call` names its child durably before the
 * child exists (the call's `seq`, unlike its id, is unique in the log even when a provider reuses call ids).
 *
 * @since 0.0.0
 * @category utils
 */
export const childIdOf: (parent: Ids.SessionId, callSeq: number) => Ids.SessionId = internal.childIdOf

/**
 * The parent of a child's session id (`<parent>~<seq>`, see {@link childIdOf}), or `undefined` for an id that is not
 * a child's: so "the latest session" of a store can mean the latest a person started.
 *
 * @since 0.0.0
 * @category utils
 */
export const parentOf: (id: Ids.SessionId) => Ids.SessionId | undefined = internal.parentOf

/**
 * The tree of a stored session and its children (and theirs), read from the store without disturbing a writer.
 *
 * @since 0.0.0
 * @category utils
 */
export const tree: (
  id: Ids.SessionId
) => Effect.Effect<Tree, SessionLogError.SessionLogError, SessionStore.SessionStore> = internal.tree
