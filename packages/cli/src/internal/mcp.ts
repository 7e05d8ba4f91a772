/**
 * `harness mcp`: one agent's operations served as MCP tools over stdio, with `@effect/ai`'s `McpServer` (ADR 0049).
 * The tools' parameters are the payloads of the operations' `Schema.TaggedRequest`s (`Operations`), their answers
 * the requests' `success` schemas, encoded; which tools exist is the `--expose` list. The agent has its workspace
 * tools, but no MCP tool reaches them.
 */
import type { LanguageModel } from "@effect/ai"
import { McpSchema, McpServer, Tool } from "@effect/ai"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeSink, NodeStream } from "@effect/platform-node"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { ServeError } from "@effect/platform/HttpServerError"
import type { Agent, Hooks } from "@harness/agent"
import { Agent as AgentModule } from "@harness/agent"
import type { Ids } from "@harness/domain"
import { AgentEvent, Operations, SessionEvent } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import { Deferred, Effect, Layer, ParseResult, Redacted, Schema, SchemaAST as AST, Stream } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import { openSession } from "./run.js"
import * as Runtime from "./runtime.js"

const Status = Schema.Struct({
  status: AgentEvent.AgentStatus,
  acceptsNextStep: Schema.Boolean,
  lastSeq: Schema.Number
})

const EventsPayload = Schema.Struct({
  since: Schema.optional(
    Schema.Number.annotations({ description: "Only events with a seq above this one (default: from the start)." })
  ),
  limit: Schema.optional(
    Schema.Number.annotations({ description: "The most events to return (default 100, at most 1000)." })
  )
})

/**
 * An exposed tool: its parameters (what the client sees and what the call is checked against), how a call runs
 * against the agent with its checked arguments, and the schemas its answer and its failure are encoded with.
 */
interface Exposed {
  readonly description: string
  readonly payload: AST.AST
  readonly run: (agent: Agent.Service, payload: unknown) => Effect.Effect<unknown, unknown>
  readonly success: AST.AST
  readonly failure: AST.AST
}

/** An operation's request class, as far as serving it goes. */
interface RequestClass {
  readonly _tag: Operations.Operation["_tag"]
  readonly fields: Schema.Struct.Fields
  readonly success: { readonly ast: AST.AST }
  readonly failure: { readonly ast: AST.AST }
}

const decodeOperation = Schema.decodeUnknown(Operations.Operation, { onExcessProperty: "error" })

/**
 * An operation as a tool: its parameters are the request's payload (its fields but `_tag`); a call is the request
 * decoded from the arguments with its tag, run by `Agent.execute`.
 */
const operation = (request: RequestClass, description: string): Exposed => ({
  description,
  payload: AST.omit(Schema.Struct(request.fields).ast, ["_tag"]),
  run: (agent, payload) =>
    Effect.flatMap(
      decodeOperation({ ...(typeof payload === "object" ? payload : {}), _tag: request._tag }),
      AgentModule.execute(agent)
    ),
  success: request.success.ast,
  failure: request.failure.ast
})

const decodeEvents = Schema.decodeUnknown(EventsPayload, { onExcessProperty: "error" })

/**
 * Every operation `harness mcp` can expose, by tool name.
 */
export const operations: Readonly<Record<string, Exposed>> = {
  send: operation(
    Operations.Send,
    "Send a message to the agent with explicit routing: target next-turn (a turn of its own) or next-step (joins " +
      "the running turn), wakeup true (make the model run) or false. Answers the message id."
  ),
  followup: operation(Operations.Followup, "Queue a message as a whole new turn and wake the agent. Answers its id."),
  steer: operation(
    Operations.Steer,
    "Steer the running turn: the message joins it at its next step (an idle agent starts a turn). Answers its id."
  ),
  inject: operation(
    Operations.Inject,
    "Add context the model sees at its next step, without making the model run. Answers its id."
  ),
  inbox: operation(Operations.ListInbox, "The pending messages (queued turns and steering), in acceptance order."),
  withdraw: operation(Operations.Withdraw, "Withdraw one pending message by id: it never runs."),
  edit: operation(Operations.Edit, "Replace a pending message's content, keeping its id and its place in the inbox."),
  move: operation(Operations.Move, "Move a pending message to a position (0 is first) among the pending ones."),
  promote: operation(Operations.Promote, "Turn a queued message into steering of the running turn."),
  demote: operation(Operations.Demote, "Turn steering not yet taken back into a queued turn of its own, last."),
  receipt: operation(
    Operations.Receipt,
    "What became of a message, from the session log: pending, ran, joined, applied, withdrawn, discarded, expired, " +
      "superseded, rejected."
  ),
  awaitReceipt: operation(
    Operations.AwaitReceipt,
    "Wait until a message's fate is final (ran, joined, applied, withdrawn, discarded, …) and answer it. Cancel the " +
      "call (notifications/cancelled) to stop waiting."
  ),
  compact: operation(
    Operations.Compact,
    "Compact the history: a turn asks the model for a summary that stands for the conversation so far (with " +
      "options.instruction instead of the configured one, if given). Refused while the agent is busy."
  ),
  approvals: operation(
    Operations.ListApprovals,
    "The tool calls waiting for an approval now, in request order: call id, tool name, its arguments, turn and step."
  ),
  approve: operation(
    Operations.Approve,
    "Answer a pending approval by call id: answer { kind: allow } runs the call, { kind: deny, reason } refuses it " +
      "(the model reads the reason). A call is answered once; answering it again is an ApprovalError."
  ),
  cancel: operation(
    Operations.Cancel,
    "Cancel the running turn. Pending messages are discarded unless options.keepInbox is true; answers the ids it " +
      "discarded and the ids it kept."
  ),
  status: {
    description: "Whether the agent is idle or running, whether a steer would join the running turn now, and the " +
      "seq of the last event in its session log.",
    payload: Schema.Struct({}).ast,
    run: (agent) =>
      Effect.map(
        Effect.all([agent.status, agent.acceptsNextStep, agent.log]),
        ([status, acceptsNextStep, log]) => ({ status, acceptsNextStep, lastSeq: log.at(-1)?.seq ?? 0 })
      ),
    success: Status.ast,
    failure: Schema.Never.ast
  },
  events: {
    description: "The agent's session log events (turns, steps, messages, tool calls and results) after a seq.",
    payload: EventsPayload.ast,
    run: (agent, payload) =>
      Effect.map(Effect.zip(agent.log, decodeEvents(payload)), ([log, payload]) => {
        // Seqs start at 0: without `since`, the first event is in.
        const since = payload.since ?? -1
        const limit = Math.max(1, Math.min(1000, Math.floor(payload.limit ?? 100)))
        return log.filter((event) => event.seq > since).slice(0, limit)
      }),
    success: Schema.Array(SessionEvent.SessionEvent).ast,
    failure: Schema.Never.ast
  }
}

/** The tools exposed when `--expose` is not given: reading, and queueing a turn. */
export const defaultExpose = ["status", "events", "inbox", "followup"] as const

/** Checks an `--expose` list: known names, at least one. */
export const parseExpose = (text: string): ReadonlyArray<string> | string => {
  const names = text.split(",").map((name) => name.trim()).filter((name) => name !== "")
  const unknown = names.filter((name) => !(name in operations))
  if (unknown.length > 0) {
    return `--expose names ${unknown.map((name) => JSON.stringify(name)).join(", ")}, which ${
      unknown.length === 1 ? "is not an operation" : "are not operations"
    }; choose from ${Object.keys(operations).join(",")}`
  }
  return names.length === 0 ? `--expose names no operation; choose from ${Object.keys(operations).join(",")}` : names
}

/**
 * A payload's JSON Schema; MCP wants an object schema, and an empty struct's is Effect's "any non-null value", so a
 * payload without fields is the empty object schema.
 */
const inputSchemaOf = (payload: AST.AST) => {
  const schema = Tool.getJsonSchemaFromSchemaAst(payload)
  return "type" in schema && schema.type === "object" ? schema : { type: "object", properties: {} }
}

const textResult = (isError: boolean, value: unknown) =>
  new McpSchema.CallToolResult({
    isError,
    // `void` answers (cancel) are `null`.
    content: [{ type: "text", text: JSON.stringify(value) ?? "null" }],
    ...(typeof value === "object" && value !== null && !Array.isArray(value)
      ? { structuredContent: value }
      : {})
  })

/** Registers the exposed tools with the server: each decodes its arguments, runs, and encodes its answer. */
const register = (agent: Agent.Service, expose: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const server = yield* McpServer.McpServer
    for (const name of expose) {
      const exposed = operations[name]!
      const encodeSuccess = Schema.encodeUnknown(Schema.make<unknown, unknown, never>(exposed.success))
      const encodeFailure = Schema.encodeUnknown(Schema.make<unknown, unknown, never>(exposed.failure))
      yield* server.addTool({
        tool: new McpSchema.Tool({
          name,
          description: exposed.description,
          inputSchema: inputSchemaOf(exposed.payload)
        }),
        handle: (payload) =>
          exposed.run(agent, payload ?? {}).pipe(
            Effect.flatMap(encodeSuccess),
            Effect.catchAll((failure) =>
              Effect.flatMap(
                ParseResult.isParseError(failure)
                  ? Effect.succeed({ _tag: "InvalidArguments", message: failure.message })
                  : Effect.orElseSucceed(encodeFailure(failure), () => ({ _tag: "Error", message: String(failure) })),
                Effect.fail
              )
            ),
            Effect.match({
              onFailure: (failure) => textResult(true, failure),
              onSuccess: (success) => textResult(false, success)
            })
          )
      })
    }
  })

/**
 * The agent's hooks: with `approve` exposed, a call that needs approval waits for the MCP client's answer (a durable
 * pending approval, ADR 0054); without it nobody could answer, so such calls are denied as with no hook.
 */
export const hooksFor = (expose: ReadonlyArray<string>): Hooks.Hooks =>
  expose.includes("approve") ? { toolApproval: () => Effect.succeed({ kind: "ask" }) } : {}

/** Where `--http` serves: the port (0 picks a free one), the host, and the bearer token every request needs. */
export interface HttpOptions {
  readonly port: number
  readonly host: string
  readonly token: Redacted.Redacted<string>
}

/** The environment variable holding the bearer token `--http` requires. */
export const tokenVariable = "HARNESS_MCP_TOKEN"

/** Compares the `Authorization` header with `Bearer <token>` in constant time (digests of equal length). */
const authorized = (header: string | undefined, token: Redacted.Redacted<string>): boolean => {
  const digest = (text: string) => createHash("sha256").update(text).digest()
  return header !== undefined && timingSafeEqual(digest(header), digest(`Bearer ${Redacted.value(token)}`))
}

/**
 * The server with `tools` registered, on its transport: stdio until standard input ends (then `ended`), or
 * Streamable HTTP at `/mcp` (`McpServer.layerHttp`) behind the bearer-token check, until the process is interrupted;
 * `started` learns the URL it listens on.
 */
const served = (
  tools: Layer.Layer<never, never, McpServer.McpServer>,
  http: HttpOptions | undefined,
  ended: Deferred.Deferred<void>,
  started: (url: string) => Effect.Effect<void>
): Layer.Layer<never, ServeError> => {
  const info = { name: "harness", version: "0.0.0" }
  if (http === undefined) {
    const stdin = NodeStream.stdin.pipe(Stream.ensuring(Deferred.succeed(ended, undefined)))
    return tools.pipe(Layer.provide(McpServer.layerStdio({ ...info, stdin, stdout: NodeSink.stdout })))
  }
  const unauthorized = HttpServerResponse.unsafeJson(
    { error: `the bearer token is missing or wrong: send Authorization: Bearer <the value of ${tokenVariable}>` },
    { status: 401, headers: { "www-authenticate": "Bearer" } }
  )
  const serving = HttpRouter.Default.serve((app) =>
    Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request) => authorized(request.headers.authorization, http.token) ? app : Effect.succeed(unauthorized)
    )
  )
  const announce = Layer.effectDiscard(
    Effect.flatMap(HttpServer.HttpServer, ({ address }) =>
      started(
        address._tag === "TcpAddress" ? `http://${address.hostname}:${address.port}/mcp` : `unix:${address.path}`
      ))
  )
  return Layer.mergeAll(tools, serving, announce).pipe(
    Layer.provide(McpServer.layerHttp({ ...info, path: "/mcp" })),
    Layer.provide(NodeHttpServer.layer(createServer, { port: http.port, host: http.host }))
  )
}

/**
 * Serves the agent of a new session (or of `session`) over stdio until standard input ends.
 *
 * Contract: nothing but MCP messages is written to standard output; the agent is disposed, and its session closed,
 * when standard input ends.
 */
export const serve = (
  settings: Settings,
  options: {
    readonly expose: ReadonlyArray<string>
    readonly session: Ids.SessionId | undefined
    readonly http?: HttpOptions | undefined
  }
): Effect.Effect<
  void,
  CommandError,
  SessionStore.SessionStore | LanguageModel.LanguageModel | CommandExecutor
> =>
  Effect.gen(function*() {
    const log = yield* openSession(options.session)
    const { agent } = yield* Runtime.makeAgent(settings, log, hooksFor(options.expose))
    const ended = yield* Deferred.make<void>()
    yield* Layer.build(
      served(
        Layer.effectDiscard(register(agent, options.expose)),
        options.http,
        ended,
        (url) => Effect.sync(() => process.stderr.write(`harness mcp: serving on ${url}\n`))
      )
    ).pipe(
      Effect.catchTag("ServeError", (e) =>
        new CommandError({
          reason: "Input",
          message: `cannot listen on ${options.http?.host}:${options.http?.port}: ${String(e.cause)} (try another port)`
        }))
    )
    yield* Deferred.await(ended)
  }).pipe(
    Effect.scoped,
    Effect.mapError((e) => (e instanceof CommandError ? e : new CommandError({ reason: "Input", message: String(e) })))
  )
