/** Previous and next around "Page N of M", for a listing the API answers a page at a time (page, page_size, total, has_next). */
export function Pager({ page, pageSize, total, hasNext, onPage }: { page: number; pageSize: number; total: number; hasNext: boolean; onPage: (page: number) => void }) {
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>Previous page</button>
      <span>Page {page} of {Math.max(1, Math.ceil(total / pageSize))}</span>
      <button type="button" disabled={!hasNext} onClick={() => onPage(page + 1)}>Next page</button>
    </nav>
  );
}
