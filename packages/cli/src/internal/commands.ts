/**
 * What the commands run — the agent, the stores, the model, the terminal UI — in one module that `Cli.ts` imports
 * only when a command needs it, so `--help`, `--version` and `config` start without loading any of it.
 */
export * as Chat from "./chat.js"
export * as Compact from "./compact.js"
export * as Demo from "./demo.js"
export * as Remote from "./remote.js"
export * as Run from "./run.js"
export * as Runtime from "./runtime.js"
export * as Sessions from "./sessions.js"
