/**
 * Runs a goal's verifier, a listed shell command (`sh -c` in the workspace, exit code 0 passes) or a registered
 * Effect, within its time limit. One that cannot run fails the check, saying why without host paths or stacks.
 */
import * as Command from "@effect/platform/Command"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { Deferred, Duration, Effect, Ref, Stream } from "effect"
import type { VerifierResult } from "../Goals.js"
import type { Goal, Verifier } from "../GoalState.js"

const timedOut = (timeout: Duration.Duration) =>
  `(timed out after ${Duration.format(timeout)}: the verifier did not finish and counts as failed)`

/** The tail of a command's output: at most `2 × max` characters held, and how many were dropped before it. */
interface Tail {
  readonly text: string
  readonly dropped: number
}

const append = (tail: Tail, chunk: string, max: number): Tail => {
  const text = tail.text + chunk
  // Cut only when twice the bound is reached: the cost of a cut is spread over `max` characters of output.
  return text.length <= 2 * max ? { text, dropped: tail.dropped } : {
    text: text.slice(text.length - max),
    dropped: tail.dropped + text.length - max
  }
}

/**
 * `head`, the kept tail and `foot`, in at most `max` characters: the tail is cut from its front to fit, behind one
 * marker that counts every character not shown (dropped while running and cut here).
 */
const bounded = (head: string, tail: Tail, foot: string, max: number): string => {
  const body = tail.text
  if (tail.dropped === 0 && head.length + body.length + foot.length <= max) return head + body + foot
  const marker = (cut: number) => `[… ${cut} characters truncated …]\n`
  let keep = Math.min(
    body.length,
    Math.max(0, max - head.length - foot.length - marker(tail.dropped + body.length).length)
  )
  keep = Math.min(
    body.length,
    Math.max(0, max - head.length - foot.length - marker(tail.dropped + body.length - keep).length)
  )
  return head + marker(tail.dropped + body.length - keep) + body.slice(body.length - keep) + foot
}

const runCommand = (
  command: string,
  options: { readonly cwd: string; readonly timeout: Duration.Duration; readonly maxOutput: number }
): Effect.Effect<VerifierResult, never, CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function*() {
      const { maxOutput, timeout } = options
      const process = yield* Command.start(
        Command.make("sh", "-c", command).pipe(
          Command.workingDirectory(options.cwd),
          Command.stdin(Stream.empty)
        )
      )
      // Collected as it arrives: a command that times out still shows what it printed.
      const collected = yield* Ref.make<Tail>({ text: "", dropped: 0 })
      const drained = yield* Deferred.make<void>()
      yield* Stream.merge(process.stdout, process.stderr).pipe(
        Stream.decodeText(),
        Stream.runForEach((text) => Ref.update(collected, (tail) => append(tail, text, maxOutput))),
        Effect.ignore,
        Effect.ensuring(Deferred.succeed(drained, undefined)),
        Effect.forkScoped
      )
      const exitCode = yield* process.exitCode.pipe(Effect.timeout(timeout), Effect.option)
      // The executor spawns it as the leader of its own group: its background jobs die with it and free the pipes.
      yield* Effect.ignore(process.kill("SIGKILL"))
      if (exitCode._tag === "Some") yield* Deferred.await(drained)
      const head = `$ ${command}\n`
      const tail = yield* Ref.get(collected)
      const separator = tail.text.endsWith("\n") || tail.text === "" ? "" : "\n"
      if (exitCode._tag === "None") {
        return { passed: false, output: bounded(head, tail, `${separator}${timedOut(timeout)}`, maxOutput) }
      }
      return {
        passed: exitCode.value === 0,
        output: bounded(head, tail, `${separator}(exit code ${exitCode.value})`, maxOutput)
      }
    })
  ).pipe(
    Effect.catchAll((error) =>
      // The platform's message names host paths (the workspace): the model is told the kind of failure only.
      Effect.succeed({
        passed: false,
        output: `$ ${command}\nthe verifier could not run: ${
          error._tag === "SystemError" ? `${error.reason} (${error.method})` : error._tag
        }`
      })
    )
  )

export const run = (
  verifier: Verifier,
  goal: Goal,
  options: {
    readonly workspace: string
    readonly verifiers: Readonly<Record<string, (goal: Goal) => Effect.Effect<VerifierResult>>>
    readonly verifierCommands: ReadonlyArray<string>
    readonly verifierTimeout: Duration.Duration
    readonly maxVerifierOutput: number
  }
): Effect.Effect<VerifierResult, never, CommandExecutor> => {
  const timeout = options.verifierTimeout
  if (verifier.kind === "command") {
    // A command is the operator's authority, never the log's nor the model's: only a listed command runs.
    if (!options.verifierCommands.includes(verifier.command)) {
      return Effect.succeed({
        passed: false,
        output: `$ ${verifier.command}\nnot run: the operator has not allowed this verifier command (Goals option ` +
          "verifierCommands); the goal cannot be verified until they do"
      })
    }
    return runCommand(verifier.command, {
      cwd: options.workspace,
      timeout,
      maxOutput: options.maxVerifierOutput
    })
  }
  const registered = Object.hasOwn(options.verifiers, verifier.name) ? options.verifiers[verifier.name] : undefined
  if (registered === undefined) {
    return Effect.succeed({ passed: false, output: `no verifier is registered under the name "${verifier.name}"` })
  }
  return Effect.suspend(() => registered(goal)).pipe(
    Effect.timeoutTo({
      duration: timeout,
      onSuccess: (result): VerifierResult => result,
      onTimeout: (): VerifierResult => ({
        passed: false,
        output: `the verifier "${verifier.name}" ${timedOut(timeout)}`
      })
    }),
    Effect.catchAllDefect((defect) =>
      Effect.succeed({
        passed: false,
        // The defect's message only: a stack trace names host paths.
        output: `the verifier "${verifier.name}" died: ${defect instanceof Error ? defect.message : String(defect)}`
      })
    )
  )
}

export const truncate = (output: string, max: number): string =>
  output.length <= max ? output : `[… ${output.length - max} characters truncated …]\n${output.slice(-max)}`
