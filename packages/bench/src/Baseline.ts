/**
 * The baseline of a same-run comparison (`npm run bench -- --baseline <rev>`): another commit's Harness, bundled from
 * that commit's `packages/` (taken with `git archive`, so the working tree is untouched) by the same build as the
 * working tree's, and run by the same workers, interleaved with it. Third-party packages come from this repository's
 * `node_modules` for both, so the comparison is of Harness's own code.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { bundleTree } from "./HarnessBuild.js"

/** The environment variable that tells a worker where the baseline's bundle is. */
export const baselineBundleEnv = "BENCH_BASELINE_BUNDLE"

/**
 * The environment variable that tells a worker where the working tree's own bundle for a comparison is: built by the
 * same `bundleTree` as the baseline's and loaded the same way, so both sides run one standalone bundle each. (Inside
 * the worker bundle the tree's adapter would share its Effect with the workloads, whose calls make Effect's functions
 * polymorphic: an A/A comparison of one commit against itself said 1.14×, 1.10–1.22×, against the tree.)
 */
export const treeBundleEnv = "BENCH_TREE_BUNDLE"

const cacheDir = fileURLToPath(new URL("../.baseline/", import.meta.url))

/** A commit's full hash and its one-line title, or an error naming the revision that does not resolve. */
const commitOf = (rev: string): { readonly sha: string; readonly title: string } => {
  try {
    const sha = execFileSync("git", ["rev-parse", "--verify", "--quiet", `${rev}^{commit}`], { encoding: "utf8" })
      .trim()
    const title = execFileSync("git", ["log", "-1", "--format=%h %s", sha], { encoding: "utf8" }).trim()
    return { sha, title }
  } catch {
    throw new Error(`--baseline ${rev}: not a commit of this repository`)
  }
}

/** Bundles the working tree's Harness adapter as {@link prepareBaseline} bundles a commit's; returns its path. */
export const prepareTree = async (): Promise<string> => {
  const bundle = join(cacheDir, "working-tree.mjs")
  await bundleTree({ outfile: bundle })
  return bundle
}

/**
 * Extracts the commit's `packages/` into `.baseline/<sha>/` (kept between runs) and bundles its Harness adapter;
 * returns the bundle's path and the commit's title.
 */
export const prepareBaseline = async (
  rev: string
): Promise<{ readonly bundle: string; readonly sha: string; readonly title: string }> => {
  const { sha, title } = commitOf(rev)
  const tree = join(cacheDir, sha)
  if (!existsSync(join(tree, "packages"))) {
    rmSync(tree, { recursive: true, force: true })
    mkdirSync(tree, { recursive: true })
    execFileSync("sh", ["-c", `git archive --format=tar "${sha}" packages tsconfig.base.json | tar -x -C "${tree}"`])
  }
  const bundle = join(cacheDir, `${sha}.mjs`)
  await bundleTree({ outfile: bundle, tree })
  return { bundle, sha, title }
}
