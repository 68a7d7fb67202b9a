/**
 * hashicorp/go-multierror v1.1.1 (the version Nomad's go.mod pins), as Nomad's validators
 * use it. Two ways of adding an error differ, and Nomad's messages show the difference:
 *
 * - `append` is `multierror.Append` (append.go): a nested multierror is flattened into
 *   this list, one bullet per error;
 * - `push` is `mErr.Errors = append(mErr.Errors, err)`: a nested multierror stays one
 *   bullet whose text is its own "N errors occurred:" block.
 *
 * The text is `ListFormatFunc` (format.go), the body Nomad's HTTP API answers with.
 */
export type GoError = string | MultiError;

export class MultiError {
  readonly errors: GoError[] = [];

  push(error: GoError | null): this {
    if (error !== null) this.errors.push(error);
    return this;
  }

  append(error: GoError | null): this {
    if (error instanceof MultiError) this.errors.push(...error.errors);
    else if (error !== null) this.errors.push(error);
    return this;
  }

  /** `ErrorOrNil`: no error when the list is empty. */
  orNil(): MultiError | null {
    return this.errors.length === 0 ? null : this;
  }

  toString(): string {
    if (this.errors.length === 1) return `1 error occurred:\n\t* ${this.errors[0]}\n\n`;
    const points = this.errors.map((error) => `* ${error}`);
    return `${this.errors.length} errors occurred:\n\t${points.join('\n\t')}\n\n`;
  }
}

/** `fmt.Errorf("prefix: %v", err)` keeps only the text of err. */
export const wrap = (prefix: string, error: GoError | null): string | null => (error === null ? null : `${prefix}${error}`);
