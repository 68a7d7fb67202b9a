/** A configuration problem found at start. Its message names the setting or key at fault and why. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
