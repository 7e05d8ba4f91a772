/**
 * The history snapshot property (`historyResume.ts`) on the memory backend: one instance per run, which every
 * "fresh instance" of the property keeps.
 */
import { Effect, Layer } from "effect"
import * as SessionStore from "../src/SessionStore.js"
import { historyResumeProperty } from "./historyResume.js"

historyResumeProperty(
  "memory",
  Effect.map(SessionStore.makeMemory, (store) => Layer.succeed(SessionStore.SessionStore, store)),
  { numRuns: 40 }
)
