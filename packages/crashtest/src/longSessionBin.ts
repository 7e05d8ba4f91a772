/**
 * The long-session child's entry point: `node longSessionBin '<Config JSON>'`. See `LongSession`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Schema } from "effect"
import * as LongSession from "./LongSession.js"

NodeRuntime.runMain(
  Schema.decode(Schema.parseJson(LongSession.Config))(process.argv[2] ?? "").pipe(
    Effect.orDie,
    Effect.flatMap(LongSession.run)
  ),
  { disableErrorReporting: false }
)
