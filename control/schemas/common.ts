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
