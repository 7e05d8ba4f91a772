import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// Child processes are killed and reopened: the tests are real-time and longer than the shared default allows.
export default mergeConfig(shared, defineProject({ test: { name: "crashtest", testTimeout: 600_000 } }))
