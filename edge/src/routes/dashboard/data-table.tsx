/** @jsxImportSource hono/jsx */
// The dashboard's tables: scrolled sideways inside their card on a narrow screen, or, with
// `stack-on-phone`, one stacked card a row, each cell labelled by its `data-label`.
import type { Child } from 'hono/jsx';

export function DataTable(props: {
  /** The column headings, in order. */
  columns: readonly string[];
  /** A last column of row actions, its heading read only by screen readers. */
  actionsColumn?: boolean;
  caption?: string;
  class?: string;
  /** The rows (`<tr>`). */
  children?: Child;
  [dataAttribute: `data-${string}`]: string | boolean | undefined;
}) {
  const { columns, actionsColumn, caption, class: extraClass, children, ...data } = props;
  return (
    <div class="table-scroll">
      <table
        class={extraClass ? `data-table stack-on-phone ${extraClass}` : 'data-table stack-on-phone'}
        {...data}
      >
        {caption ? <caption>{caption}</caption> : null}
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col">{column}</th>
            ))}
            {actionsColumn ? (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
