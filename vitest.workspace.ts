// Every package with a vitest.config.ts is a test project; `npm test` runs them all. The domain, session and agent
// tests run a second time as `<name>-slow` with HARNESS_SLOW_PATH=1 (vitest.slow.config.ts, ADR 0065).
export default ["packages/*/vitest.config.ts", "packages/*/vitest.slow.config.ts"]
