// Package record holds what both stores (storage, on SQLite, and
// storage/postgres) do to the record without SQL, so that they accept,
// refuse, index and walk it alike: the rules at the record's door (valid
// text, entry and audit checks, the checks of a restored session), the
// text an entry contributes to search and the cost bound of a query, the
// window summary's evidence lists and its rebuild, and the checks of a
// walk along parent links. Each store keeps its SQL and hands this package
// rows; nothing here reads or writes a database.
package record
