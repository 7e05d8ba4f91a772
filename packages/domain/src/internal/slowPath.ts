/**
 * `HARNESS_SLOW_PATH=1`: every hand-built twin of a schema steps aside and the schema does the work, so the tests
 * run both ways show the twins change nothing (ADR 0065). Read once, when the module loads.
 */
export const slowPath: boolean =
  (globalThis as { readonly process?: { readonly env: Record<string, string | undefined> } }).process?.env[
    "HARNESS_SLOW_PATH"
  ] === "1"
