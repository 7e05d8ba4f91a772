/**
 * The store property (`storeProperty.ts`) and the history snapshot property (`historyResume.ts`) on the memory
 * backend: one instance per run, which "reopen" (a fresh instance) keeps.
 */
import { Effect, Layer } from "effect"
import * as SessionStore from "../src/SessionStore.js"
import { historyResumeProperty } from "./historyResume.js"
import { storeProperty } from "./storeProperty.js"

const place = Effect.map(SessionStore.makeMemory, (store) => Layer.succeed(SessionStore.SessionStore, store))

storeProperty("memory", place, { numRuns: 40 })

historyResumeProperty("memory", place, { numRuns: 40 })
