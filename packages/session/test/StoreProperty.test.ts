/**
 * The store property (`storeProperty.ts`) on the memory backend: one instance per run, which "reopen" keeps.
 */
import { Effect, Layer } from "effect"
import * as SessionStore from "../src/SessionStore.js"
import { storeProperty } from "./storeProperty.js"

storeProperty(
  "memory",
  Effect.map(SessionStore.makeMemory, (store) => Layer.succeed(SessionStore.SessionStore, store)),
  { numRuns: 40 }
)
