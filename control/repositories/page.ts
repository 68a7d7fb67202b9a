import type { Knex } from 'knex';

export interface Page<Row> {
  rows: Row[];
  /** Rows matching the query across all pages. */
  total: number;
}

/**
 * One page of `query` in `order`, and how many rows match in all; both from the same filter.
 * `columns`, when given, are all the page reads (the count takes none of them).
 */
export async function pageOf<Row extends object>(
  query: Knex.QueryBuilder<Row, Row[]>,
  order: { column: string; order: 'asc' | 'desc' }[],
  offset: number,
  limit: number,
  columns?: readonly string[],
): Promise<Page<Row>> {
  const page = columns ? query.clone().select(...columns) : query.clone();
  const [rows, counted] = await Promise.all([
    page.orderBy(order).offset(offset).limit(limit),
    query.clone().count<{ count: string }[]>({ count: '*' }),
  ]);
  return { rows: rows as Row[], total: Number(counted[0]?.count ?? 0) };
}
