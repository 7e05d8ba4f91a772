/** The chat's slash commands (`/queue`, `/inbox`, `/drop N`, `/expand`, `/goal`, …), as `/help` lists them. */
import { Message, MessageSource } from "@harness/domain"
import { Deferred, Effect, Option, Ref } from "effect"
import type { CommandError } from "../CliError.js"
import * as ChatAgents from "./chatAgents.js"
import { type ChatContext, expandLines, type State } from "./chatView.js"
import * as Inbox from "./inbox.js"
import * as Keys from "./keys.js"
import { visible } from "./output.js"

/** The chat's commands, as `/help` lists them (`window`: the double-press window, in milliseconds). */
export const help = (window: number): ReadonlyArray<string> => [
  "Enter            send: steers the running turn, or starts a turn when idle",
  "/queue text, +text  queue a follow-up turn (runs after the current one)",
  "/inject text     add context the model sees at its next step (does not run the model)",
  "/compact [focus] summarise the conversation so far; later requests carry the summary instead",
  "/inbox           list pending items with numbers      /drop N   withdraw item N",
  "/promote N       turn queued item N into steering of the running turn",
  "/now text        stop the running turn (keeping the inbox) and run this next, ahead of everything queued",
  "/ifidle text     start a turn only if none is running; refused (nothing sent) while one runs",
  "/redo text       as /now, and the stopped turn is left out of what the model sees from now on (it stays logged)",
  "/move N M        put item N at place M (1 is first) among the items queued (or steering) like it",
  "/goal set <objective> | show | pause | resume | clear    keep working toward an objective over rounds",
  "Esc, Ctrl-C      cancel the running turn, keeping the inbox",
  `Ctrl-C Ctrl-C    (within ${Keys.windowWords(window)}) discard the inbox; on an idle prompt, exit; after one`,
  "                 Ctrl-C the next queued item waits until that time is up, so a second one can still stop it",
  "Up               on an empty prompt: edit the last queued item in place (Up again: the one before; Enter saves,",
  "                 Esc leaves it as it was; if the agent took it meanwhile, the text is queued as a new follow-up)",
  "/expand [N]      the full arguments and output of tool call N (default: the last one)",
  ...ChatAgents.help,
  "/sessions        list stored sessions                 /exit     leave (also Ctrl-D)",
  "Approvals: y = allow once, n = deny, a = always allow this exact shell command, or writes to files in this folder"
]

/** Runs `command` (a word starting with `/`) with its `argument` (`rest`: its words); `st`: the state when submitted. */
export const run = (
  context: ChatContext,
  st: State,
  command: string,
  rest: ReadonlyArray<string>,
  argument: string
): Effect.Effect<void, CommandError> =>
  Effect.gen(function*() {
    const { agent, goal, goals, subagents } = context.started
    const { backend, calls, dropped, emit, fates, gated, held, inboxItems, queue, quit, s, sendError, settings } =
      context
    const { summary, update, window } = context
    switch (command) {
      case "/exit":
      case "/quit":
        return yield* Effect.asVoid(Deferred.succeed(quit, undefined))
      case "/help":
        return yield* emit(help(window).map((l) => s.dim(l)))
      case "/queue":
        return yield* queue(argument)
      case "/now":
      case "/redo":
      case "/ifidle": {
        if (argument === "") return yield* emit([`usage: ${command} your request`])
        // `whenBusy` (R142): decided in the agent's own critical section, so there is no race with a turn's end.
        const sent = yield* Effect.either(
          agent.send(Message.make(argument), {
            target: "next-turn",
            wakeup: true,
            whenBusy: command === "/now" ? "interrupt" : command === "/redo" ? "rollback" : "reject"
          })
        )
        if (sent._tag === "Right") {
          const note = command === "/now" ? "(runs next)" : command === "/redo" ? "(runs next, instead)" : "(sent)"
          return yield* emit([`${s.bold("+")} ${argument} ${s.dim(note)}`])
        }
        if (sent.left._tag === "TurnRunningError") {
          return yield* emit([s.yellow(`not sent: a turn is running (/ifidle sends only to an idle agent)`)])
        }
        return yield* sendError(sent.left)
      }
      case "/inject": {
        if (argument === "") return yield* emit(["usage: /inject some context"])
        yield* agent.inject(Message.make(argument, MessageSource.plugin("chat"))).pipe(Effect.mapError(sendError))
        return yield* emit([s.dim(`  + context (the model sees it at its next step): ${argument}`)])
      }
      case "/inbox": {
        // At the gate, the restored item the agent holds is listed first: it is pending too.
        const holding = yield* Ref.get(held)
        const atGate = (yield* gated) && holding !== undefined
          ? (summary?.pending ?? []).filter((item) => item.id === holding.id)
          : []
        const items = [...atGate, ...(yield* inboxItems)]
        yield* update((x) => ({ ...x, listed: items }))
        return yield* emit(
          items.length === 0
            ? ["the inbox is empty"]
            : items.map((item, i) =>
              `${i + 1}. ${item.placement.padEnd(8)} ${item.source === "user" ? "" : `(${item.source}) `}${
                visible(item.label.replace(/\s+/g, " "))
              }`
            )
        )
      }
      case "/drop": {
        // The numbers are those `/inbox` showed; before any listing, the inbox as it is now.
        const items = st.listed.length > 0 ? st.listed : yield* inboxItems
        const n = Number(rest[0])
        const item = Number.isInteger(n) ? items[n - 1] : undefined
        if (item === undefined) {
          return yield* emit([
            items.length === 0
              ? "the inbox is empty: nothing to drop"
              : `no item ${rest[0] ?? ""}: /drop takes a number from 1 to ${items.length} (/inbox lists them)`
          ])
        }
        const withdrew = `withdrew ${n}. ${item.placement} ${visible(item.text)} ${s.dim("(it will not run)")}`
        const gone = (fate: Inbox.Fate | undefined) =>
          s.yellow(`item ${n} is no longer pending: ${Inbox.fateWords(fate)} (${visible(item.text)})`)
        // An item the agent holds at the gate (claimed, not yet run) is dropped there, once.
        if ((yield* Ref.get(dropped)).has(item.id)) return yield* emit([gone("withdrawn")])
        const holding = yield* Ref.get(held)
        if ((yield* gated) && holding?.id === item.id) {
          yield* Ref.update(dropped, (ids) => new Set([...ids, item.id]))
          yield* fates.note(item.id, "withdrawn")
          return yield* emit([withdrew])
        }
        const result = yield* Inbox.drop(agent, fates, item.id)
        return yield* emit([result._tag === "Withdrawn" ? withdrew : gone(result.fate)])
      }
      case "/promote":
      case "/move": {
        // The numbers are those `/inbox` showed, as for `/drop`.
        const items = st.listed.length > 0 ? st.listed : yield* inboxItems
        const n = Number(rest[0])
        const item = Number.isInteger(n) ? items[n - 1] : undefined
        const usage = command === "/promote" ? "/promote N" : "/move N M"
        if (item === undefined) {
          return yield* emit([
            items.length === 0
              ? `the inbox is empty: nothing to ${command.slice(1)}`
              : `no item ${rest[0] ?? ""}: ${usage} takes a number from 1 to ${items.length} (/inbox lists them)`
          ])
        }
        const m = Number(rest[1])
        if (command === "/move" && !(Number.isInteger(m) && m >= 1)) {
          return yield* emit([
            `usage: /move N M puts item N at place M (1 is first) among the ${item.placement} items`
          ])
        }
        const result = yield* (command === "/promote"
          ? Inbox.promote(agent, item.id)
          : Inbox.move(agent, item.id, m - 1)).pipe(Effect.mapError(sendError))
        if (result._tag === "Refused") {
          return yield* emit([
            s.yellow(
              `could not ${command.slice(1)} item ${n} (${visible(item.text)}): ${Inbox.refusalWords(result.reason)}`
            )
          ])
        }
        const after = (yield* inboxItems).filter((other) => other.placement === result.item.placement)
        const place = after.findIndex((other) => other.id === item.id) + 1
        return yield* emit([
          command === "/promote"
            ? `promoted ${n}. ${visible(item.text)} ${s.dim("(steering: it joins the running turn at its next step)")}`
            : `moved ${n}. ${visible(item.text)} ${
              s.dim(
                `(now ${place > 0 ? `place ${place}` : "no longer pending"} of the ${result.item.placement} items)`
              )
            }`
        ])
      }
      case "/expand": {
        const all = yield* Ref.get(calls)
        const n = rest[0] === undefined ? all.length : Number(rest[0])
        const call = Number.isInteger(n) ? all[n - 1] : undefined
        if (call === undefined) {
          return yield* emit([
            all.length === 0
              ? "no tool calls yet"
              : `no tool call ${rest[0] ?? ""}: /expand takes a number from 1 to ${all.length}`
          ])
        }
        const output = call.result === undefined ? ["(still running)"] : visible(call.result.text).split("\n")
        const shown = output.slice(0, expandLines)
        return yield* emit([
          s.cyan(`[${n}] ${call.name} ${visible(call.args)}`),
          ...(call.result?.isError === true ? [s.yellow("failed:")] : []),
          ...shown.map((line) => `  ${line}`),
          ...(output.length > shown.length
            ? [
              s.dim(
                `  … ${output.length - shown.length} more lines${
                  Option.match(Option.fromNullable(backend.flags(settings)), {
                    onNone: () => "",
                    onSome: (flags) => ` (harness sessions export --format md${flags} ${agent.id})`
                  })
                }`
              )
            ]
            : [])
        ])
      }
      case "/compact": {
        const started = yield* agent.compact(argument === "" ? undefined : { instruction: argument }).pipe(
          Effect.as(true),
          Effect.catchAll((e) => Effect.as(emit([`cannot compact now: ${e.message}`]), false))
        )
        if (started) yield* emit([s.dim("  compacting: the next requests carry a summary of the conversation")])
        return
      }
      case "/agents":
      case "/agent":
        return yield* emit(
          subagents === undefined
            ? ChatAgents.unavailable(goals === undefined)
            : yield* ChatAgents.run(subagents, agent, command, argument)
        )
      case "/sessions":
        return yield* emit(
          (yield* backend.list.pipe(Effect.catchAll((e) => Effect.succeed([e.message])))).map(visible)
        )
      case "/goal":
        return yield* emit(
          (yield* goal(argument).pipe(
            Effect.catchAll((e) => Effect.succeed(e.message))
          )).split("\n").map((line) => s.magenta(visible(line)))
        )
      default:
        return yield* emit([`unknown command ${command}: /help lists the commands`])
    }
  })
