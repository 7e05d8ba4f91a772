/**
 * Starts a throwaway PostgreSQL server for the tests (see `server.ts`) and stops it afterwards; the URL of its
 * `postgres` database reaches the tests as `inject("postgresUrl")`. Never skipped: without PostgreSQL the suite
 * fails, saying how to install it.
 */
import type { TestProject } from "vitest/node"
import { startServer } from "./server.js"

declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const server = await startServer()
  project.provide("postgresUrl", server.url)
  return server.stop
}
