import { fileURLToPath } from "node:url"
import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

export default mergeConfig(
  shared,
  defineProject({
    test: { name: "cli", globalSetup: [fileURLToPath(new URL("./test/globalSetup.ts", import.meta.url))] }
  })
)
