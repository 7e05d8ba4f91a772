import { fileURLToPath } from "node:url"
import { defaultServerConditions } from "vite"
import { defineConfig } from "vitest/config"

/**
 * The export condition under which every `@harness/*` package resolves to its TypeScript sources (ADR 0045): the
 * published `exports` point at `dist/`, so tests, and every Node process a test starts (through `NODE_OPTIONS`),
 * ask for the sources instead and never run a stale build.
 */
const source = "@harness/source"

// Settings every package's vitest config extends.
export default defineConfig({
  resolve: { conditions: [source, ...defaultServerConditions] },
  ssr: { resolve: { conditions: [source, ...defaultServerConditions] } },
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: [fileURLToPath(new URL("./vitest.setup.ts", import.meta.url))],
    sequence: { concurrent: false },
    testTimeout: 30_000,
    env: { NODE_OPTIONS: [process.env.NODE_OPTIONS, `--conditions=${source}`].filter(Boolean).join(" ") }
  }
})
