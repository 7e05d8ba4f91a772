import { defineConfig } from "vitest/config"

// Settings every package's vitest config extends.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    sequence: { concurrent: false },
    testTimeout: 30_000
  }
})
