import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// The same tests with every hand-built schema twin stepped aside (ADR 0065); `npm test` runs both projects.
export default mergeConfig(
  shared,
  defineProject({ test: { name: "domain-slow", env: { HARNESS_SLOW_PATH: "1" } } })
)
