/**
 * What the database says about a view: shared by the SQLite and PostgreSQL
 * inspectors (a leaf, so neither imports the other for it).
 *
 * @module
 */

/** One column of a view, with the table column it is a plain copy of (if any). */
export interface ViewColumn {
  name: string;
  /** Physical table (or view) name the column comes from. */
  table?: string;
  /** Physical column name in that table. */
  column?: string;
  /** The type the database declares for the column, if it knows one. */
  dbType?: string;
}

/** What the database says a view reads and does. */
export interface ViewInspection {
  /**
   * Relations read, by physical name (views included on PostgreSQL); objects
   * outside the entity tables carry a qualified or descriptive name
   * (`sqlite_schema`, `pg_catalog.pg_class`, `information_schema.tables`).
   */
  reads: string[];
  /** Other things the view does that views may not (functions, virtual tables). */
  refused: string[];
  columns: ViewColumn[];
}
