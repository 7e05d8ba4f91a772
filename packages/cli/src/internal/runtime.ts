/**
 * What every command builds from the settings: the agent over a session with the workspace tools, in this process
 * or on a server. The session store and the model come from their tables (`stores.ts`, `providers.ts`).
 */
import type { LanguageModel } from "@effect/ai"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { Agent, Hooks } from "@harness/agent"
import type { Ids, SessionEvent, Store } from "@harness/domain"
import { Goals } from "@harness/goal"
import { SessionLog, SessionStore } from "@harness/session"
import { SubagentError, Subagents } from "@harness/subagents"
import * as NodeWorkspaceTools from "@harness/tools/NodeWorkspaceTools"
import type { Redacted, Scope } from "effect"
import { Context, Effect, Layer } from "effect"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import * as Agents from "./agents.js"
import * as Goal from "./goal.js"
import * as McpServers from "./mcpServers.js"
import * as Remote from "./remote.js"
import * as Sessions from "./sessions.js"
import { agentBudget, showStore, storeFlags } from "./settings.js"

/** The system prompt of every CLI agent. */
export const system = "You are Harness, a terse assistant working in the user's workspace. Use the workspace " +
  "tools (list_dir, read_file, find_files, grep, write_file, edit_file, shell) when a question is about files."

/** An agent, its goal service, and its subagents (when `.harness/agents.json` configures some). */
export interface Running {
  readonly agent: Agent.Service
  readonly goals: Goals.Service
  readonly subagents: Subagents.Service | undefined
}

/**
 * An agent over `session` with the workspace tools and the goal system (its guard outermost, its tools first), in
 * the current scope. Command verifiers run in the workspace.
 */
export const makeAgent = (
  settings: Settings,
  session: SessionLog.Service,
  hooks: Hooks.Hooks = {}
): Effect.Effect<
  Running,
  CommandError,
  LanguageModel.LanguageModel | CommandExecutor | SessionStore.SessionStore | Scope.Scope
> =>
  Effect.gen(function*() {
    const tools = yield* NodeWorkspaceTools.make({ root: settings.workspace.value }).pipe(
      Effect.mapError((e) => new CommandError({ reason: "Input", message: `the workspace tools: ${e.message}` }))
    )
    const mcp = settings.mcp.length === 0 ? [] : yield* McpServers.tools(settings.mcp)
    const plugin = yield* Goals.make({ workspace: settings.workspace.value }).pipe(
      Effect.mapError((e) => new CommandError({ reason: "Input", message: `the goal system: ${e.message}` }))
    )
    const children = yield* Agents.attach(
      settings.workspace.value,
      tools,
      hooks.toolApproval === undefined ? undefined : (input, next) => hooks.toolApproval!(input, next)
    )
    const agent = yield* Effect.mapError(
      Agent.make({
        session,
        system,
        tools: [...plugin.tools, ...tools, ...mcp, ...(children?.tools ?? [])],
        hooks: Hooks.compose(plugin.hooks, hooks),
        model: settings.model.value,
        provider: settings.provider.value,
        budget: agentBudget(settings),
        compaction: settings.contextWindow.value === undefined
          ? undefined
          : { contextWindow: settings.contextWindow.value, threshold: settings.compactThreshold.value }
      }),
      (e) => new CommandError({ reason: "Input", message: `cannot build the agent: ${e.message}` })
    ).pipe(Effect.provideService(Subagents.Subagents, children?.subagents ?? unused))
    const goals = yield* Effect.mapError(
      plugin.attach(agent),
      (e) => new CommandError({ reason: "Input", message: `cannot start goals: ${e.message}` })
    )
    // A reopened parent learns what became of the children a crash cut (nothing when none was).
    if (children !== undefined) {
      yield* Effect.mapError(
        children.subagents.resume(agent),
        (e) => new CommandError({ reason: "Store", message: `cannot report the subagents: ${e.message}` })
      )
    }
    return { agent, goals, subagents: children?.subagents }
  })

/** The subagents of an agent without any: its tools never ask for the service. */
const unused: Subagents.Service = {
  spawn: () => Effect.dieMessage("no subagents are configured"),
  list: Effect.succeed([]),
  get: (id) => new SubagentError.SubagentError({ reason: "unknown", id }),
  resume: () => Effect.succeed([])
}

/**
 * A session's agent as `run` and `chat` use it; `goals` and `subagents` are absent on a server, where `goal` (the
 * chat's `/goal`) goes through the goal routes and the children live on the server.
 */
export interface Started {
  readonly agent: Agent.Service
  readonly goals: Goals.Service | undefined
  /** Runs the text after the chat's `/goal` and answers what to print. */
  readonly goal: (argument: string) => Effect.Effect<string, { readonly message: string }>
  readonly subagents?: Subagents.Service | undefined
}

/** A session opened for a command: what it held when opened (for chat's summary), and how to start its agent. */
export interface Opened {
  /** The session's events when opened (after crash repair). */
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
  /** The items the agent restores (`SessionLog.pendingInbox`); none on a server, whose agent runs them already. */
  readonly pendingInbox: ReadonlyArray<Store.InboxAccepted>
  /** The agent, in the current scope; `hooks` (approvals) apply here only: a server's agent has its own. */
  readonly start: (hooks: Hooks.Hooks) => Effect.Effect<Started, CommandError, Scope.Scope>
}

/**
 * Where the agent of `run`, `chat` and `sessions resume` lives: in this process over the store and the model in
 * context ({@link layerLocal}), or on a server (`--remote`, {@link layerRemote}). The commands' code is the same for
 * both: it sees an `Agent.Service` (ADR 0058).
 */
export class Backend extends Context.Tag("@harness/cli/Backend")<Backend, {
  /** Opens `session` (a new one when absent) for the current scope. */
  readonly open: (
    settings: Settings,
    session: Ids.SessionId | undefined
  ) => Effect.Effect<Opened, CommandError, Scope.Scope>
  /** The session whose id is `text` or starts with it. */
  readonly resolveId: (text: string) => Effect.Effect<Ids.SessionId, CommandError>
  /** The session active last (`chat --continue`). */
  readonly latest: Effect.Effect<Ids.SessionId, CommandError>
  /** `sessions list`'s lines. */
  readonly list: Effect.Effect<ReadonlyArray<string>, CommandError>
  /** Where the sessions are, as the commands print it (the store, or the server's URL). */
  readonly where: (settings: Settings) => string
  /** The flags that name this place again in a printed command (`undefined`: a memory store, gone at exit). */
  readonly flags: (settings: Settings) => string | undefined
}>() {}

/** The agent in this process, over the store and the model in context. */
export const layerLocal: Layer.Layer<
  Backend,
  never,
  SessionStore.SessionStore | LanguageModel.LanguageModel | CommandExecutor
> = Layer.effect(
  Backend,
  Effect.gen(function*() {
    const context = yield* Effect.context<SessionStore.SessionStore | LanguageModel.LanguageModel | CommandExecutor>()
    return {
      open: (settings, session) =>
        Effect.gen(function*() {
          const log = yield* openSession(session)
          return {
            events: yield* log.events,
            pendingInbox: log.pendingInbox,
            start: (hooks: Hooks.Hooks) =>
              Effect.provide(
                Effect.map(makeAgent(settings, log, hooks), (running) => ({
                  ...running,
                  goal: (argument: string) => Goal.command(running.goals, argument)
                })),
                context
              )
          }
        }).pipe(Effect.provide(context)),
      resolveId: (text) => Effect.provide(Sessions.resolveId(text), context),
      latest: Effect.provide(latestSession, context),
      list: Effect.provide(Sessions.list, context),
      where: (settings) => showStore(settings.store.value),
      flags: (settings) => storeFlags(settings, process.cwd())
    }
  })
)

/**
 * The agent of a session on the server at `url`, reached with `token` (`RemoteAgent`, over Node's HTTP client). A
 * server that cannot be reached, a token it refuses and a session it does not have are `CommandError`s naming the
 * URL (never the token).
 */
export const layerRemote = (url: string, token: Redacted.Redacted): Layer.Layer<Backend> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const [{ RemoteAgent }, { NodeHttpClient }] = yield* Effect.promise(() =>
      Promise.all([import("@harness/server"), import("@effect/platform-node")])
    )
    const http = yield* Layer.build(NodeHttpClient.layer)
    const client = yield* Remote.connect(url, token)
    return Layer.succeed(Backend, {
      open: (_settings, session) =>
        Effect.gen(function*() {
          const agent = yield* RemoteAgent.make({ baseUrl: url, token, session }).pipe(
            Effect.provide(http),
            Effect.mapError((e) => new CommandError({ reason: "Remote", message: `${url}: ${e.message}` }))
          )
          return {
            events: session === undefined ? [] : yield* agent.log,
            pendingInbox: [],
            start: () => Effect.succeed({ agent, goals: undefined, goal: Remote.goal(client, url, agent.id) })
          }
        }),
      resolveId: (text) => Remote.resolveId(client, url, text),
      latest: Effect.flatMap(Effect.mapError(client.sessions.list(), Remote.failure(url)), (all) => {
        const last = all.filter((s) => Subagents.parentOf(s.id) === undefined)
          .sort((a, b) => a.lastActivity - b.lastActivity).at(-1)
        return last === undefined
          ? new CommandError({ reason: "SessionNotFound", message: `no session to continue on ${url}` })
          : Effect.succeed(last.id)
      }),
      list: Remote.list(client, url),
      where: () => url,
      flags: () => ` --remote ${url}`
    })
  }))

/**
 * Opens (or creates) the session a command works on, holding its writer lease for the command's scope: another
 * process on the session is told who holds it (ADR 0044).
 */
export const openSession = (id: Ids.SessionId | undefined) =>
  Effect.acquireRelease(
    (id === undefined ? SessionLog.make() : SessionLog.open(id)).pipe(
      Effect.mapError((e) =>
        new CommandError({
          reason: "Store",
          message: id === undefined
            ? `cannot create a session: ${e.message}`
            : `cannot open session ${id}: ${e.message}`
        })
      )
    ),
    (log) => Effect.ignore(log.close)
  )

/** The session of this store that was active last (`chat --continue`), subagents' sessions aside. */
export const latestSession: Effect.Effect<Ids.SessionId, CommandError, SessionStore.SessionStore> = Effect.gen(
  function*() {
    const store = yield* SessionStore.SessionStore
    const all = yield* Effect.mapError(store.list, (e) => new CommandError({ reason: "Store", message: e.message }))
    // A subagent's session is active after its parent's: the latest is the latest a person started.
    const last = all.filter((s) => Subagents.parentOf(s.header.id) === undefined)
      .sort((a, b) => a.lastActivity - b.lastActivity).at(-1)
    if (last === undefined) {
      return yield* new CommandError({
        reason: "SessionNotFound",
        message: "no session to continue in this store: harness chat starts a new one"
      })
    }
    return last.header.id
  }
)
