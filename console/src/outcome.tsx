/** How a tab's last action went: the API's refusal as an alert, a success in a status line that screen readers announce. */
export function Outcome({ error, done }: { error: string; done: string }) {
  return (
    <>
      {error && <p role="alert" class="error">{error}</p>}
      <p role="status" class="note">{done}</p>
    </>
  );
}
