/**
 * The seed of the property and fuzz tests: FC_SEED when set (to reproduce or explore), a fixed one
 * in CI (CI=true), so that a run there is repeatable, and a new one on a developer's machine, so
 * that local runs keep exploring. The seed is in the describe name of each suite.
 */
export const FIXED_CI_SEED = 20_261_126;

export function propertySeed(env: NodeJS.ProcessEnv = process.env): number {
  if (env.FC_SEED !== undefined && env.FC_SEED !== "") return Number(env.FC_SEED);
  if (env.CI === "true" || env.CI === "1") return FIXED_CI_SEED;
  return Date.now() % 2_147_483_647;
}
