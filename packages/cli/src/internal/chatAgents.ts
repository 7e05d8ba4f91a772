/**
 * `/agents` and `/agent N …` in the chat: the subagents of the running session, numbered in spawn order, and the
 * person's operations on one of them — steer, queue a follow-up, withdraw its pending items, cancel its turn —
 * through the child's own `Agent.Service` (ADR 0055), the same operations the parent's program has.
 */
import type { Agent } from "@harness/agent"
import type { SessionEvent } from "@harness/domain"
import { Content, Message } from "@harness/domain"
import { Subagents } from "@harness/subagents"
import { Effect, Option, Schema } from "effect"
import { visible } from "./output.js"
import * as Timeline from "./timeline.js"

/** The lines `/help` adds for these commands. */
export const help: ReadonlyArray<string> = [
  "/agents          the subagents of this session: number, session, name, status, last line",
  "/agent N text    steer subagent N's running turn     /agent N +text   queue a follow-up turn for it",
  "/agent N withdraw  withdraw its pending items          /agent N cancel  cancel its turn (its parent's call ends)"
]

/** What the commands say when the chat has no subagents to show: none configured, or the agent is elsewhere. */
export const unavailable = (remote: boolean): ReadonlyArray<string> => [
  remote
    ? "/agents is not available with --remote: the server's agent runs its subagents"
    : "no subagents are configured: .harness/agents.json in the workspace defines them"
]

const lastLine = (text: string): string => {
  const lines = text.split("\n").map((line) => line.trim()).filter((line) => line !== "")
  const last = lines.at(-1) ?? ""
  return visible(last.length > 100 ? `${last.slice(0, 99)}…` : last)
}

/** What a running child did last, from its log: its last answer line, tool call, or prompt. */
const lastOfLog = (events: ReadonlyArray<SessionEvent.SessionEvent>): string => {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    switch (event.type) {
      case "assistant/message": {
        const text = lastLine(Content.joinText(event.data.content.filter((block) => block.type === "text")))
        if (text !== "") return text
        break
      }
      case "tool/call":
        return `⚙ ${Timeline.callLine(event.data.name, visible(event.data.arguments))}`
      case "steering/message":
        return `↪ ${lastLine(Content.joinText(event.data.content))}`
      case "user/message":
        return `▸ ${lastLine(Content.joinText(event.data.content))}`
    }
  }
  return ""
}

const decodeOutcome = Schema.decodeUnknownOption(Schema.parseJson(Subagents.Outcome))

/** A finished child's answer, from its parent's log: the result of its call (or, in the background, the report). */
const answerOf = (parent: ReadonlyArray<SessionEvent.SessionEvent>, child: Subagents.Child): string => {
  for (let i = parent.length - 1; i >= 0; i--) {
    const event = parent[i]!
    if (
      event.type === "user/message" && event.data.source.kind === "plugin" &&
      event.data.source.plugin === `subagent:${child.id}`
    ) return lastLine(Content.joinText(event.data.content))
    if (event.type === "tool/result" && event.data.callId === child.callId && !child.background) {
      const outcome = decodeOutcome(event.data.content.map((block) => block.text).join(""))
      return Option.match(outcome, { onNone: () => "", onSome: (o) => lastLine(o.answer) })
    }
  }
  return ""
}

/** `/agents`: one line per child, numbered from 1 in spawn order (finished children keep their number). */
const listing = (subagents: Subagents.Service, parent: Agent.Service) =>
  Effect.gen(function*() {
    const children = yield* subagents.list
    if (children.length === 0) return ["no subagents yet: the agent starts one when it calls a subagent's tool"]
    const parentLog = yield* parent.log
    const rows: Array<string> = []
    for (const [i, child] of children.entries()) {
      const running = yield* Effect.option(subagents.get(child.id))
      const last = Option.isSome(running) ? lastOfLog(yield* running.value.log) : answerOf(parentLog, child)
      const status = child.state === "running" && Option.isSome(running)
        ? `running${(yield* running.value.status) === "idle" ? " (idle)" : ""}`
        : child.state
      rows.push(
        `  ${i + 1}  ${child.id}  ${child.agent}${child.background ? " (background)" : ""}  ${status}` +
          (last === "" ? "" : `  ${last}`)
      )
    }
    return [`subagents of this session (/agent N text steers one):`, ...rows]
  })

const usage = "usage: /agent N text | /agent N +text | /agent N withdraw | /agent N cancel  (/agents numbers them)"

/**
 * Runs `/agents` or `/agent <argument>` and answers the lines to print. Contract: `N` is the child's number in
 * `/agents` (spawn order, so it never changes); `text` steers the child's running turn (an idle child starts a turn
 * with it), `+text` queues a follow-up turn, `withdraw` withdraws every pending item of its inbox, `cancel` cancels
 * its turn with cause `user` (its parent's call completes `cancelled`, the parent goes on). A finished child, an
 * unknown number and a refused send are said in words; nothing is sent then.
 */
export const run = (
  subagents: Subagents.Service,
  parent: Agent.Service,
  command: "/agents" | "/agent",
  argument: string
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function*() {
    if (command === "/agents") return yield* listing(subagents, parent)
    const match = /^(\d+)\s+([\s\S]+)$/.exec(argument.trim())
    if (match === null) return [usage]
    const children = yield* subagents.list
    const n = Number(match[1])
    const child = children[n - 1]
    if (child === undefined) return [`no subagent ${match[1]}: /agents lists them`]
    const name = `subagent ${n} (${child.agent})`
    const agent = yield* Effect.either(subagents.get(child.id))
    if (agent._tag === "Left") return [`${name} has finished (${child.state}): nothing sent`]
    const rest = match[2]!.trim()
    const said = (effect: Effect.Effect<ReadonlyArray<string>, { readonly message: string }>) =>
      Effect.catchAll(effect, (e) => Effect.succeed([`${name} refused it: ${visible(e.message)}`]))
    switch (rest) {
      case "cancel":
        return yield* said(Effect.as(agent.right.cancel("user"), [`  ✕ cancelled ${name}'s turn`]))
      case "withdraw":
        return yield* said(Effect.gen(function*() {
          const items = yield* agent.right.inbox
          const results = yield* Effect.forEach(items, (item) => agent.right.withdraw(item.id))
          const gone = results.filter((result) => result._tag === "Withdrawn").length
          return [`  withdrew ${gone} pending item${gone === 1 ? "" : "s"} of ${name}`]
        }))
    }
    if (rest.startsWith("+")) {
      const text = rest.slice(1).trim()
      if (text === "") return [usage]
      return yield* said(Effect.as(agent.right.followup(Message.make(text)), [`  + queued for ${name}: ${text}`]))
    }
    return yield* said(Effect.as(agent.right.steer(Message.make(rest)), [`  ↪ steering ${name}: ${rest}`]))
  })
