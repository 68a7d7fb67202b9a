/** Where a listing's page starts and how long it is, from its `page` and `page_size` (1 and 20 when left out). */
export interface PageWindow {
  page: number;
  pageSize: number;
  offset: number;
}

export interface PageEnvelope {
  total: number;
  page: number;
  page_size: number;
  has_next: boolean;
}

export const DEFAULT_PAGE_SIZE = 20;

export function pageWindow(query: { page?: number; page_size?: number }): PageWindow {
  const page = query.page ?? 1;
  const pageSize = query.page_size ?? DEFAULT_PAGE_SIZE;
  return { page, pageSize, offset: (page - 1) * pageSize };
}

/** The bookkeeping every paged listing answers beside its items. */
export function pageEnvelope(window: PageWindow, total: number): PageEnvelope {
  return { total, page: window.page, page_size: window.pageSize, has_next: window.page * window.pageSize < total };
}
