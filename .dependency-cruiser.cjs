// Cycle check over packages/*/src (`npm run check:cycles`). Type-only imports (`import type`) are skipped: they
// vanish at runtime, so an internal module may name a public module's types. Every other import counts, including
// `import { type X }`, which verbatimModuleSyntax keeps as a side-effect import.
/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-value-cycle",
      comment: "Modules must not import each other for values, directly or through other modules.",
      severity: "error",
      from: {},
      to: {
        circular: true,
        viaOnly: { dependencyTypesNot: ["type-only"] }
      }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" }
  }
}
