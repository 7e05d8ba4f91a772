/**
 * The crash-test child's entry point: `tsx bin.ts '<ChildConfig JSON>'`. See `Child`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as Child from "./Child.js"
import { decodeConfig } from "./Protocol.js"

const program = decodeConfig(process.argv[2]).pipe(
  Effect.matchEffect({
    onFailure: (error) => Child.report({ _tag: "failed", message: `bad configuration: ${error.message}` }),
    onSuccess: Child.run
  })
)

NodeRuntime.runMain(program, { disableErrorReporting: true })
