import { Type, type SchemaOptions, type TUnsafe } from '@sinclair/typebox';

/** A string enum as plain JSON Schema `enum`, which reads better in errors than anyOf of consts. */
export const StringEnum = <T extends string>(values: readonly T[], options: SchemaOptions = {}): TUnsafe<T> =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });

export const NullableInteger = (options: { minimum: number; maximum: number } & SchemaOptions): TUnsafe<number | null> =>
  Type.Unsafe<number | null>({ type: ['integer', 'null'], ...options });

export const Timestamp = Type.String({ format: 'date-time' });

export const ErrorBody = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    details: Type.Record(Type.String(), Type.Unknown()),
  },
  { $id: 'Error', description: 'Every error of the control API' },
);

export const Label = Type.String({ minLength: 1, maxLength: 128 });

/** The query of every paged listing, with the same limits everywhere. */
export const PAGE_QUERY = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  page_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'default 20' })),
};

/** What every paged listing answers beside its items. */
export const PAGE_FIELDS = {
  total: Type.Integer({ description: 'items across all pages' }),
  page: Type.Integer(),
  page_size: Type.Integer(),
  has_next: Type.Boolean(),
};

/** true only if A and B are the same type, optional and readonly modifiers included. */
export type SameType<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/**
 * Compiles only if `Check` is true: `Holds<SameType<Static<typeof Schema>, DomainType>>`
 * keeps a schema and the domain type it documents from drifting apart.
 */
export type Holds<Check extends true> = Check;
