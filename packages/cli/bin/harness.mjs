#!/usr/bin/env node
// The `harness` executable: loads the TypeScript entry point through tsx's loader.
import { register } from "tsx/esm/api"

register()
await import("../src/bin.ts")
