// The block pool aggregated for big pools: consecutive blocks in groups, each counted as used
// (held by a request), cached (free but holding a prefix hash) or free, so a pool of tens of
// thousands of blocks reads as a density map; a region of it can then be shown cell by cell.

export const DENSITY_ABOVE = 4096; // pools with more blocks than this start aggregated
export const REGION_BLOCKS = 1024; // the blocks a drill-down shows as cells

/** Blocks per group so that the map has at most `maxGroups` groups. */
export function groupSize(numBlocks, maxGroups = 2048) {
  return Math.max(1, Math.ceil(numBlocks / maxGroups));
}

/** Per group [used, cached, free] counts from the run's owner and cached columns. */
export function poolDensity(run, size) {
  const n = run.numBlocks;
  const groups = Math.ceil(n / size);
  const used = new Uint32Array(groups);
  const cached = new Uint32Array(groups);
  const free = new Uint32Array(groups);
  for (let b = 0; b < n; b++) {
    const g = Math.floor(b / size);
    if (run.owner[b] >= 0) used[g] += 1;
    else if (run.cached[b]) cached[g] += 1;
    else free[g] += 1;
  }
  return { size, groups, used, cached, free };
}

/** The region of cells a click on group `g` drills into: [start, end) block ids, centred on the
 * group and kept inside the pool. */
export function regionAround(g, size, numBlocks, blocks = REGION_BLOCKS) {
  const len = Math.min(blocks, numBlocks);
  const centre = g * size + Math.floor(size / 2);
  const start = Math.max(0, Math.min(numBlocks - len, centre - Math.floor(len / 2)));
  return [start, start + len];
}
