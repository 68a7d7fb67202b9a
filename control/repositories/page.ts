import type { Knex } from 'knex';

export interface Page<Row> {
  rows: Row[];
  /** Rows matching the query across all pages. */
  total: number;
}

/** One page of `query` in `order`, and how many rows match in all; both from the same filter. */
export async function pageOf<Row extends object>(
  query: Knex.QueryBuilder<Row, Row[]>,
  order: { column: string; order: 'asc' | 'desc' }[],
  offset: number,
  limit: number,
): Promise<Page<Row>> {
  const [rows, counted] = await Promise.all([
    query.clone().orderBy(order).offset(offset).limit(limit),
    query.clone().count<{ count: string }[]>({ count: '*' }),
  ]);
  return { rows: rows as Row[], total: Number(counted[0]?.count ?? 0) };
}
