import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// The PostgreSQL tests reuse @harness/store-postgres's throwaway server (ADR 0047): one per run, its URL injected.
export default mergeConfig(
  shared,
  defineProject({ test: { name: "cluster", globalSetup: ["../store-postgres/test/globalSetup.ts"] } })
)
