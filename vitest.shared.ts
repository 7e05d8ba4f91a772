import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// Settings every package's vitest config extends.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: [fileURLToPath(new URL("./vitest.setup.ts", import.meta.url))],
    sequence: { concurrent: false },
    testTimeout: 30_000
  }
})
