// Every package with a vitest.config.ts is a test project; `npm test` runs them all.
export default ["packages/*/vitest.config.ts"]
